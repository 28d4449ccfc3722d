-- Shared by every script; prepended to each when it is loaded.
--
-- A lock's key holds "<owner>:<until>" while granted, or "W<waiter id>:<until>" while
-- reserved for the longest-waiting waiter, where <until> is when the grant or the
-- reservation ends, in Unix milliseconds of the server's clock. Without a suffix the key
-- expires at <until> and nobody waits: releasing it is one GETDEL. The suffix ":q" says
-- waiters may be queued (the queue key): the key then lives on past <until>, kept alive
-- by the waiters, so that nobody takes the lock past them when its holder expires.

-- The server's clock: Unix ms, and Unix µs as a decimal string.
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
    t[1] .. string.format('%06d', tonumber(t[2]))
end

-- A lock key's value: whether it is a reservation, the owner's (or waiter's) id, until
-- when, and whether waiters may be queued. Nil for a value robit did not write.
local function parse(value)
  local w, id, ends, q = string.match(value, '^(W?)(%x+):(%d+)(:?q?)$')
  if not id then
    return nil
  end
  return w == 'W', id, tonumber(ends), q == ':q'
end

-- Queue entries are "<waiter id>:<poll interval ms>". Reserves the lock for the waiter at
-- the head of the queue, for the hand-off window or twice the waiter's poll interval if
-- that is longer (a waiter that missed the notification still finds its reservation when
-- it next polls), and tells it on the channel. Returns the waiter's id and the window,
-- or false when nobody waits (the lock's key is left as it is).
local function hand_off(lock, queue, channel, window_ms, now)
  local head = redis.call('LPOP', queue)
  if not head then
    return false
  end
  local waiter, poll_ms = string.match(head, '^(%x+):(%d+)$')
  if not waiter then
    -- Not an entry this version wrote: skip it rather than strand the lock.
    return hand_off(lock, queue, channel, window_ms, now)
  end
  local window = math.max(tonumber(window_ms), 2 * tonumber(poll_ms))
  redis.call('SET', lock, 'W' .. waiter .. ':' .. (now + window) .. ':q', 'PXAT', now + window)
  redis.call('PUBLISH', channel, waiter)
  return waiter, window
end


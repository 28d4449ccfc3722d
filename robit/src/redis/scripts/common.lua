-- Shared by every script; included in each when it is loaded (after the uncontended path
-- of acquire and release).
--
-- A lock's key holds "<owner>:<s>:<us>:<ttl>@<token>" while granted, or
-- "W<waiter id>:<s>:<us>:<window>" while reserved for the longest-waiting waiter: when it
-- was made or last renewed, as TIME answered it (seconds and microseconds), for how many
-- milliseconds, and the grant's fencing token. A grant with a lock-delay holds
-- "<owner>:<s>:<us>:<ttl>+<delay>@<token>": when its lease ends by expiry, the key lives
-- on for the delay and refuses everyone (its owner's renewals included) until then; a
-- release deletes it as any other. Written from TIME's own strings, so that the
-- uncontended path converts no number to text. Without a suffix the key expires when the
-- grant or reservation ends, and nobody waits: releasing it is one GETDEL. The suffix ":q" says waiters may be
-- queued (the queue key): the key then lives on past the end, kept alive by the waiters,
-- so that nobody takes the lock past them when its holder expires.

-- Unix milliseconds of a time given as TIME gives it: seconds and microseconds, as text.
local function millis(s, us)
  return tonumber(s) * 1000 + math.floor(tonumber(us) / 1000)
end

-- The server's identity as failover detection compares it (acquire.lua reads it the same
-- way, before this file): '/', then the first 16 hex digits of its run_id and of its
-- master_replid, which a restart or a promotion changes. Nil if INFO names neither.
local function server_identity()
  local info = redis.call('INFO', 'server', 'replication')
  local run, replication = string.match(info, 'run_id:(%x+)'), string.match(info, 'master_replid:(%x+)')
  if not run or not replication then
    return nil
  end
  return '/' .. string.lower(string.sub(run, 1, 16) .. string.sub(replication, 1, 16))
end

-- TIME, and the server's clock in Unix milliseconds.
local function clock()
  local t = redis.call('TIME')
  return t, millis(t[1], t[2])
end

-- "<id>:<s>:<us>:<ms>": `id`'s grant (or reservation) made at TIME `t`, for `ms`.
local function stamp(id, t, ms)
  return id .. ':' .. t[1] .. ':' .. t[2] .. ':' .. ms
end

-- A lock key's value: whether it is a reservation, the owner's (or waiter's) id, when it
-- ends (Unix ms), whether waiters may be queued, until when it keeps others out (its
-- end, plus any lock-delay), and the grant's fencing token (text; nil for a
-- reservation). Nil for a value robit did not write.
local function parse(value)
  local flagged = string.sub(value, -2) == ':q'
  local body = flagged and string.sub(value, 1, -3) or value
  local w, id, s, us, ms, delay, token =
    string.match(body, '^(W?)(%x+):(%d+):(%d+):(%d+)%+?(%d*)@?(%d*)$')
  if not id then
    return nil
  end
  local ends = millis(s, us) + tonumber(ms)
  return w == 'W', id, ends, flagged, ends + (tonumber(delay) or 0), token ~= '' and token or nil
end

-- Queue entries are "<waiter id>:<poll interval ms>", and from a waiter that can be
-- granted the lock by a release (release_rest.lua) "<waiter id>:<poll interval
-- ms>:<ttl ms>[+<lock-delay ms>]". Reserves the lock for the waiter at the head of the
-- queue (`head`, if the caller took it out already), for the hand-off window or twice
-- the waiter's poll interval if that is longer (a waiter that missed the notification
-- still finds its reservation when it next polls), and tells it on the channel. Returns
-- the waiter's id and the window, or false when nobody waits (the lock's key is left as
-- it is).
local function hand_off(lock, queue, channel, window_ms, t, now, head)
  head = head or redis.call('LPOP', queue)
  if not head then
    return false
  end
  local waiter, poll_ms = string.match(head, '^(%x+):(%d+):?[%d+]*$')
  if not waiter then
    -- Not an entry this version wrote: skip it rather than strand the lock.
    return hand_off(lock, queue, channel, window_ms, t, now)
  end
  local window = math.max(tonumber(window_ms), 2 * tonumber(poll_ms))
  redis.call('SET', lock, stamp('W' .. waiter, t, window) .. ':q', 'PXAT', now + window)
  redis.call('PUBLISH', channel, waiter)
  return waiter, window
end


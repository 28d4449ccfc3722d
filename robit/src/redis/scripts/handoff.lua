-- Shared by the scripts that free a lock (release, withdraw, and acquire when a holder
-- expired with waiters queued). Prepended to each of them when it is loaded.

-- The presence key of `waiter`, in the namespace of `queue` ("{<namespace>}:queue:...";
-- a namespace has no braces). Not among the script's KEYS, but it shares their hash
-- tag, so it lives in the same Redis Cluster slot.
local function presence(queue, waiter)
  return string.match(queue, '^{[^}]*}') .. ':waiter:' .. waiter
end
--
-- Queue entries are "<waiter id>:<poll interval ms>". The lock is reserved for the
-- first waiter in line that is still there ("W<waiter id>") for the hand-off window, or
-- for twice the waiter's poll interval if that is longer: a waiter that missed the
-- notification still finds its reservation when it next polls.
--
-- A waiter is still there while its presence key, "{<namespace>}:waiter:<id>", lives:
-- every attempt it makes while waiting sets it for the queue's lifetime (four poll
-- intervals, at least a second). A waiter whose process died, or that has not been
-- heard from for that long, is skipped instead of being handed the lock to hold it up.
--
-- Returns the waiter's id and the window, or false when nobody waits.
local function hand_off(lock, queue, channel, window_ms)
  local head = redis.call('LPOP', queue)
  if not head then
    redis.call('DEL', lock)
    return false
  end
  local waiter, poll_ms = string.match(head, '^(%x+):(%d+)$')
  if not waiter then
    -- Not an entry this version wrote: skip it rather than strand the lock.
    return hand_off(lock, queue, channel, window_ms)
  end
  if redis.call('EXISTS', presence(queue, waiter)) == 0 then
    -- Gone silent: skip it rather than reserve the lock for nobody.
    return hand_off(lock, queue, channel, window_ms)
  end
  local window = math.max(tonumber(window_ms), 2 * tonumber(poll_ms))
  redis.call('SET', lock, 'W' .. waiter, 'PX', window)
  redis.call('PUBLISH', channel, waiter)
  return waiter, window
end


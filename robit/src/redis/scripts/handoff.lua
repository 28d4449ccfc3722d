-- Shared by the scripts that free a lock (release, withdraw, and acquire when a holder
-- expired with waiters queued). Prepended to each of them when it is loaded.
--
-- Queue entries are "<waiter id>:<poll interval ms>". The lock is reserved for the
-- waiter at the head ("W<waiter id>") for the hand-off window, or for twice the waiter's
-- poll interval if that is longer: a waiter that missed the notification still finds
-- its reservation when it next polls.
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
  local window = math.max(tonumber(window_ms), 2 * tonumber(poll_ms))
  redis.call('SET', lock, 'W' .. waiter, 'PX', window)
  redis.call('PUBLISH', channel, waiter)
  return waiter, window
end


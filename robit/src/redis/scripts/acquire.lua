-- Acquire: one round trip. Grants the lock, queues the caller fairly, or refuses during
-- a quarantine after state loss.
--
-- KEYS[1] lock       the lock's key: an owner token (a grant) or "W<waiter>" (a hand-off
--                    reserved for that waiter), with a TTL
-- KEYS[2] queue      waiter ids in arrival order, expiring when nobody refreshes it
-- KEYS[3] fence      the namespace's fencing counter (no TTL)
-- KEYS[4] quarantine present while grants are suspended after state loss
-- ARGV: owner, ttl_ms, waiter ('' for a single try), queue_ttl_ms, channel, handoff_ms,
--       quarantine_ms
-- Returns {1, fence} granted, {0, pttl} held (pttl -1: no expiry), {2, ms} quarantined.
local lock, queue, fence, quarantine = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, ttl, waiter = ARGV[1], ARGV[2], ARGV[3]
local queue_ttl, channel, handoff = tonumber(ARGV[4]), ARGV[5], ARGV[6]
local quarantine_ms = tonumber(ARGV[7])

-- Reads first: a key of the wrong type fails the script before anything is written.
local current = redis.call('GET', lock)
local head = redis.call('LINDEX', queue, 0)

local function wait_in_line()
  if waiter ~= '' then
    if not redis.call('LPOS', queue, waiter) then
      redis.call('RPUSH', queue, waiter)
    end
    if redis.call('PTTL', queue) < queue_ttl then
      redis.call('PEXPIRE', queue, queue_ttl)
    end
  end
end

local left = redis.call('PTTL', quarantine)
if left > 0 then
  wait_in_line()
  return {2, left}
end

local reserved_for_me = waiter ~= '' and current == 'W' .. waiter
if current and not reserved_for_me then
  wait_in_line()
  return {0, redis.call('PTTL', lock)}
end
if not reserved_for_me and head and head ~= waiter then
  -- Free, but others have waited longer (the last holder expired instead of releasing):
  -- hand it to the longest-waiting one, and queue behind.
  redis.call('LPOP', queue)
  redis.call('SET', lock, 'W' .. head, 'PX', handoff)
  redis.call('PUBLISH', channel, head)
  wait_in_line()
  return {0, tonumber(handoff)}
end

local token = redis.call('INCR', fence)
if token == 1 then
  -- The counter was missing: the namespace is new, or its state was lost (a restart
  -- without persistence, FLUSHALL, eviction). Grants made before a loss may still be
  -- believed in by their holders until their TTL runs out, so grant nothing for the
  -- quarantine. The counter restarts at the server's clock in microseconds, above every
  -- earlier token.
  local now = redis.call('TIME')
  redis.call('SET', fence, now[1] .. string.format('%06d', tonumber(now[2])))
  if quarantine_ms > 0 then
    redis.call('SET', quarantine, '1', 'PX', quarantine_ms)
    wait_in_line()
    return {2, quarantine_ms}
  end
  token = redis.call('INCR', fence)
end
-- A waiter granted here was first in line (or its reservation was popped already).
if waiter ~= '' and head == waiter then
  redis.call('LPOP', queue)
end
redis.call('SET', lock, owner, 'PX', ttl)
return {1, token}

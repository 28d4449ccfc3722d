-- Acquire: one round trip. Grants the lock, queues the caller fairly, or refuses during
-- a quarantine after state loss.
--
-- KEYS[1] lock       the lock's key: an owner token (a grant) or "W<waiter>" (a hand-off
--                    reserved for that waiter), with a TTL
-- KEYS[2] queue      waiter ids in arrival order, expiring when nobody refreshes it
-- KEYS[3] fence      the namespace's fencing counter (no TTL)
-- KEYS[4] quarantine present while grants are suspended after state loss
-- ARGV: owner, ttl_ms, waiter id ('' for a single try), queue entry ('<id>:<poll ms>'),
--       queue_ttl_ms, channel, handoff_ms, quarantine_ms
-- Returns {1, fence, next} granted (next: the id of the waiter now first in line, or ''),
-- {0, pttl} held (pttl -1: no expiry), {2, ms} quarantined.
local lock, queue, fence, quarantine = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, ttl, waiter, entry = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local queue_ttl, channel, handoff = tonumber(ARGV[5]), ARGV[6], ARGV[7]
local quarantine_ms = tonumber(ARGV[8])

-- Reads first: a key of the wrong type fails the script before anything is written.
local current = redis.call('GET', lock)
local head = redis.call('LINDEX', queue, 0)

local function wait_in_line()
  if waiter ~= '' then
    if not redis.call('LPOS', queue, entry) then
      redis.call('RPUSH', queue, entry)
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
if not reserved_for_me and head and head ~= entry then
  -- Free, but others have waited longer (the last holder expired instead of releasing):
  -- hand it to the longest-waiting one, and queue behind.
  local _, window = hand_off(lock, queue, channel, handoff)
  wait_in_line()
  return {0, window or 0}
end

-- Tokens follow the server's clock in microseconds as well as the counter: whatever
-- state a restart brings back (none, an old snapshot, a replica's), the next token is
-- above every earlier one as long as the clock has not gone back.
local now = redis.call('TIME')
local clock = now[1] .. string.format('%06d', tonumber(now[2]))
local token = redis.call('INCR', fence)
if token == 1 and quarantine_ms > 0 then
  -- The counter was missing: the namespace is new, or its state was lost (a restart
  -- without persistence, FLUSHALL, eviction). Grants made before a loss may still be
  -- believed in by their holders until their TTL runs out, so grant nothing for the
  -- quarantine. (The quarantine is written before anything can fail.)
  redis.call('SET', quarantine, '1', 'PX', quarantine_ms)
  redis.call('SET', fence, clock)
  wait_in_line()
  return {2, quarantine_ms}
end
if token < tonumber(clock) then
  redis.call('SET', fence, clock)
  token = tonumber(clock)
end
-- A waiter granted here was first in line (or its reservation was popped already).
if waiter ~= '' and head == entry then
  redis.call('LPOP', queue)
  head = redis.call('LINDEX', queue, 0)
end
redis.call('SET', lock, owner, 'PX', ttl)
-- The next in line, if any: a release of this grant through the same driver wakes it
-- early when it is one of that driver's waiters.
return {1, token, head and string.match(head, '^(%x+):%d+$') or ''}

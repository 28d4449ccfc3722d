-- Withdraw: a waiter gave up. Leave the queue, and pass on a hand-off reserved for it, or
-- a grant a release made it (release_rest.lua) that it never took up.
-- KEYS[1] lock         see common.lua
-- KEYS[2] queue        the waiters' entries, oldest first
-- ARGV[1] waiter       the waiter's id
-- ARGV[2] entry        its queue entry (see common.lua)
-- ARGV[3] channel      where hand-offs are published
-- ARGV[4] handoff_ms   a hand-off's reservation window, at least
-- Returns 0 if nothing was reserved for (or granted to) the waiter; 1 if it was freed with
-- nobody else waiting; or the id of the waiter it was passed on to (as release does).
redis.pcall('LREM', KEYS[2], 0, ARGV[2])
local value = redis.pcall('GET', KEYS[1])
if type(value) ~= 'string' then
  return 0
end
local reserved, id, _, _, _, token = parse(value)
if id ~= (reserved and ARGV[1] or ARGV[1] .. (token or '')) then
  return 0
end
local waiter = hand_off(KEYS[1], KEYS[2], ARGV[3], ARGV[4], clock())
if waiter then
  return waiter
end
redis.call('DEL', KEYS[1])
return 1

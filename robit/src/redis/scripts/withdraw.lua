-- Withdraw: a waiter gave up. Leave the queue, and pass on a hand-off reserved for it.
-- KEYS[1] lock, KEYS[2] queue; ARGV: waiter id, queue entry, channel, handoff_ms.
-- Returns 0 if nothing was reserved for the waiter; 1 if its reservation was freed with
-- nobody else waiting; or the id of the waiter it was passed on to (as release does).
redis.pcall('LREM', KEYS[2], 0, ARGV[2])
local value = redis.pcall('GET', KEYS[1])
if type(value) ~= 'string' then
  return 0
end
local reserved, id = parse(value)
if not reserved or id ~= ARGV[1] then
  return 0
end
local waiter = hand_off(KEYS[1], KEYS[2], ARGV[3], ARGV[4], clock())
if waiter then
  return waiter
end
redis.call('DEL', KEYS[1])
return 1

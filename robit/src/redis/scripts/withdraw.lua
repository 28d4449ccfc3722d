-- Withdraw: a waiter gave up. Leave the queue, and pass on a hand-off reserved for it.
-- KEYS[1] lock, KEYS[2] queue; ARGV: waiter id, queue entry, channel, handoff_ms.
-- Returns 1 if a reservation was passed on.
redis.pcall('LREM', KEYS[2], 0, ARGV[2])
if redis.pcall('GET', KEYS[1]) ~= 'W' .. ARGV[1] then
  return 0
end
hand_off(KEYS[1], KEYS[2], ARGV[3], ARGV[4])
return 1

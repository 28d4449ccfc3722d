-- Withdraw: a waiter gave up. Leave the queue, and pass on a hand-off reserved for it.
-- KEYS[1] lock, KEYS[2] queue; ARGV: waiter, channel, handoff_ms.
redis.pcall('LREM', KEYS[2], 0, ARGV[1])
if redis.pcall('GET', KEYS[1]) ~= 'W' .. ARGV[1] then
  return 0
end
local head = redis.call('LPOP', KEYS[2])
if head then
  redis.call('SET', KEYS[1], 'W' .. head, 'PX', ARGV[3])
  redis.call('PUBLISH', ARGV[2], head)
else
  redis.call('DEL', KEYS[1])
end
return 1

-- Release: delete the grant only if it is still the caller's, handing the lock to the
-- longest-waiting waiter if there is one.
-- KEYS[1] lock, KEYS[2] queue; ARGV: owner, channel, handoff_ms.
-- Returns 1 released, 0 not the caller's (already gone, or someone else's).
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then
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

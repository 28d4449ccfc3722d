-- Release: delete the grant only if it is still the caller's, handing the lock to the
-- longest-waiting waiter if there is one.
-- KEYS[1] lock, KEYS[2] queue; ARGV: owner, channel, handoff_ms.
-- Returns 0 not the caller's (already gone, or someone else's); 1 released with nobody
-- waiting; or the id of the waiter the lock is now reserved for, so that a waiter in the
-- caller's own process can be woken without waiting for the published notification.
-- pcall: a key overwritten with another type is simply not the caller's grant.
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
return hand_off(KEYS[1], KEYS[2], ARGV[2], ARGV[3]) or 1

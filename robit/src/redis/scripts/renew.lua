-- Renew: extend the grant only if it is still the caller's.
-- KEYS[1] lock; ARGV: owner, ttl_ms. Returns 1 renewed, 0 not the caller's any more.
-- pcall: a key overwritten with another type is simply not the caller's grant.
if redis.pcall('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0

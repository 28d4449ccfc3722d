-- Renew: extend the grant only if it is still the caller's and has not ended.
-- KEYS[1] lock; ARGV: owner, ttl_ms. Returns 1 renewed, 0 not the caller's any more.
-- pcall: a key of another type is simply not the caller's grant.
local value = redis.pcall('GET', KEYS[1])
if type(value) ~= 'string' then
  return 0
end
local reserved, id, until_ms, flagged = parse(value)
if reserved or id ~= ARGV[1] then
  return 0
end
local t, now = clock()
if until_ms <= now then
  -- Ended; the key lives on only for the waiters.
  return 0
end
if flagged then
  redis.call('SET', KEYS[1], stamp(id, t, ARGV[2]) .. ':q', 'KEEPTTL')
  redis.call('PEXPIREAT', KEYS[1], now + tonumber(ARGV[2]), 'GT')
else
  redis.call('SET', KEYS[1], stamp(id, t, ARGV[2]), 'PX', ARGV[2])
end
return 1

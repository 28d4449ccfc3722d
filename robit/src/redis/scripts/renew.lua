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
local now = clock()
if until_ms <= now then
  -- Ended; the key lives on only for the waiters.
  return 0
end
local ends = now + tonumber(ARGV[2])
if flagged then
  redis.call('SET', KEYS[1], id .. ':' .. ends .. ':q', 'KEEPTTL')
  redis.call('PEXPIREAT', KEYS[1], ends, 'GT')
else
  redis.call('SET', KEYS[1], id .. ':' .. ends, 'PXAT', ends)
end
return 1

-- Renew: extend the grant only if it is still the caller's and has not ended.
-- KEYS[1] lock      see common.lua
-- ARGV[1] owner     the caller's owner token
-- ARGV[2] ttl_ms    the new TTL
-- ARGV[3] span?     with a lock-delay only: the grant's span, '<ttl ms>+<delay ms>'
-- ARGV[4] key_ms?   with a lock-delay only: the key's lifetime, the TTL plus the delay
-- Returns 1 renewed, 0 not the caller's any more (gone, someone else's, or ended and in
-- its lock-delay).
-- pcall: a key of another type is simply not the caller's grant.
local value = redis.pcall('GET', KEYS[1])
if type(value) ~= 'string' then
  return 0
end
local reserved, id, until_ms, flagged, _, token = parse(value)
if reserved or id ~= ARGV[1] then
  return 0
end
local t, now = clock()
if until_ms <= now then
  -- Ended; the key lives on only for the waiters, or for the lock-delay.
  return 0
end
local key_ms = ARGV[4] or ARGV[2]
local renewed = stamp(id, t, ARGV[3] or ARGV[2]) .. (token and '@' .. token or '')
if flagged then
  redis.call('SET', KEYS[1], renewed .. ':q', 'KEEPTTL')
  redis.call('PEXPIREAT', KEYS[1], now + tonumber(key_ms), 'GT')
else
  redis.call('SET', KEYS[1], renewed, 'PX', key_ms)
end
return 1

-- Raise: after a quorum grant whose servers answered different tokens, lift this
-- server's fencing counter to the quorum's token (the largest), while the caller's grant
-- here is still live, so that every later grant here gets a larger one (redlock/mod.rs).
-- The grant records the quorum's token too, for an operator's inspection.
-- KEYS[1] lock    see common.lua
-- KEYS[2] fence   the namespace's fencing counter (see acquire.lua)
-- ARGV[1] owner   the caller's owner token
-- ARGV[2] token   the quorum's token (decimal digits)
-- Returns 1 raised (or at that token already), 0 the grant is not the caller's any more.
-- pcall: a key of another type is simply not the caller's grant.
local value = redis.pcall('GET', KEYS[1])
if type(value) ~= 'string' then
  return 0
end
local reserved, id, until_ms, _, _, token = parse(value)
if reserved or id ~= ARGV[1] then
  return 0
end
local _, now = clock()
if until_ms <= now then
  return 0
end
local last = redis.call('GET', KEYS[2])
local digits, rest = string.match(last or '', '^(%d+)(.*)$')
if not digits then
  -- The counter is gone (and the grant with it, but for a hand's DEL) or not robit's.
  return 0
end
if tonumber(digits) < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2] .. rest)
end
if token and tonumber(token) < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], (string.gsub(value, '@%d+', '@' .. ARGV[2], 1)), 'KEEPTTL')
end
return 1

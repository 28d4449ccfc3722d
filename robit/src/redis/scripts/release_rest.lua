-- Release, continued: a marked grant, or someone else's (see release.lua).
local reserved, id, _, flagged, blocks = parse(old)
if reserved or id ~= ARGV[1] then
  if careful then
    return 0
  end
  -- Someone else's: put it back. A value robit did not write goes back without an
  -- expiry, as its own is unknown now.
  if not id then
    redis.call('SET', KEYS[1], old)
  elseif flagged then
    local _, now = clock()
    redis.call('SET', KEYS[1], old, 'PXAT', math.max(blocks, now + tonumber(ARGV[3])))
  else
    redis.call('SET', KEYS[1], old, 'PXAT', blocks)
  end
  return 0
end
if careful then
  redis.call('DEL', KEYS[1])
end
if ARGV[5] == '1' then
  return 1
end
return hand_off(KEYS[1], KEYS[2], ARGV[2], ARGV[3], clock()) or 1

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
  -- Given back by a quorum's attempt without a majority: handed on now, it would go from
  -- waiter to waiter, none able to win while another holds the lock elsewhere. With
  -- waiters queued, the caller goes back to the head of the queue, where its turn here
  -- was, and the key stays as an ended grant, still marked: the next claim hands it to
  -- the first of them (the caller, if it still waits), waking it then.
  local keep = redis.call('PTTL', KEYS[2])
  if flagged and keep > 0 then
    if ARGV[6] then
      redis.call('LPUSH', KEYS[2], ARGV[6])
    end
    local t = redis.call('TIME')
    redis.call('SET', KEYS[1], stamp(id, t, 0) .. ':q', 'PX', keep)
  end
  return 1
end
return hand_off(KEYS[1], KEYS[2], ARGV[2], ARGV[3], clock()) or 1

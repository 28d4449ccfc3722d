-- Acquire, continued: everything but the uncontended grant (see acquire.lua).
local lock, queue, fence, quarantine = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, ttl_arg, waiter, entry = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local queue_ttl, channel, handoff = tonumber(ARGV[5]), ARGV[6], ARGV[7]
local quarantine_ms, lost, queued = tonumber(ARGV[8]), ARGV[9] == '1', ARGV[10] == '1'

-- The clock in Unix ms, and when the caller's key would expire (its grant's end, plus
-- any lock-delay).
local now = millis(t[1], t[2])
local ends = now + tonumber(ttl_arg)

-- Puts back what the lock's key held before this script (nothing, or `old`).
local function undo(old)
  if not old then
    redis.call('DEL', lock)
    return
  end
  local _, _, _, flagged, blocks = parse(old)
  redis.call('SET', lock, old, 'PXAT', flagged and math.max(blocks, now + queue_ttl) or blocks)
end

-- The namespace was written on another server, or another life of this one (its counter
-- names a server other than the caller's connection's): a replica promoted by a
-- failover, a restart from a snapshot or an AOF. It may lack grants whose holders still
-- believe in them, so grant nothing for the quarantine (a longer one running is kept),
-- and record this server as the namespace's. `digits`: the last token.
local function moved(old, digits)
  local left = redis.call('PTTL', quarantine)
  if left ~= -1 and left < quarantine_ms then
    redis.call('SET', quarantine, 'moved', 'PX', quarantine_ms)
    left = quarantine_ms
  end
  redis.call('SET', fence, digits .. 'q' .. server)
  undo(old)
  return {2, left, 1}
end

-- Writes `text` as the grant's token, in the counter and in the lock's key, in place of
-- the candidate the grant was written with.
local function retoken(text)
  redis.call('SET', fence, text .. server)
  mine = string.gsub(mine, '@%d+$', '@' .. text)
  local held = redis.call('GET', lock)
  redis.call('SET', lock, (string.gsub(held, '@%d+', '@' .. text, 1)), 'KEEPTTL')
end

-- The lock's key now holds the caller's grant: issue its fencing token, the larger of
-- the last token plus one and the candidate (the server's clock in microseconds, or a
-- quorum's proposal), so that tokens keep increasing across any restart (without
-- persistence, or from an older snapshot) as long as the clock has not gone back. A new
-- counter starts at the clock even in a quorum. Or find the namespace quarantined, and
-- undo. `read`: the counter was written already, and held `last`.
local function fenced(old, read)
  if server == '*' then
    -- Read only now: an attempt that queues needs no identity.
    server = server_identity()
    if not server then
      -- A server too old for detection: put the lock's key back. A queue entry of the
      -- caller's that a hand-off took out stays out: the caller fails for good, and
      -- waits no more.
      undo(old)
      return redis.error_reply('ERR robit: INFO names no run_id or master_replid; use Redis '
        .. '7.0 or later, or turn failover detection off')
    end
  end
  if not read then
    last = redis.call('SET', fence, candidate .. server, 'GET')
  end
  if not last then
    -- The counter was missing: the namespace is new, or its state was lost (a restart
    -- without persistence, FLUSHALL, eviction). Grants made before a loss may still be
    -- believed in by their holders until their TTL runs out, so grant nothing for the
    -- quarantine when the caller knows the namespace existed.
    if lost and quarantine_ms > 0 then
      redis.call('SET', quarantine, '1', 'PX', quarantine_ms)
      redis.call('SET', fence, micros .. 'q' .. server)
      undo(old)
      return {2, quarantine_ms}
    end
    if tonumber(micros) > tonumber(candidate) then
      retoken(micros)
      return {1, tonumber(micros), '', 1}
    end
    return {1, tonumber(candidate), '', 1}
  end
  -- A mark may have been appended by hand (after the server's identity, by APPEND), more
  -- than once, or to a missing counter.
  local digits, marked, id, appended = string.match(last, '^(%d*)(q*)(/?%x*)(q*)$')
  if not digits then
    redis.call('SET', fence, last)
    undo(old)
    return redis.error_reply('ERR robit: the fencing counter ' .. fence .. ' holds a value '
      .. 'robit did not write; delete the key to let the namespace start again')
  end
  if server ~= '' and id ~= server and quarantine_ms > 0 then
    return moved(old, digits)
  end
  if marked ~= '' or appended ~= '' then
    local left = redis.call('PTTL', quarantine)
    if left > 0 or left == -1 then
      redis.call('SET', fence, last)
      undo(old)
      return {2, left, redis.call('GET', quarantine) == 'moved' and 1 or nil}
    end
  end
  local token = (tonumber(digits) or 0) + 1
  -- After a quarantine (a loss, or a counter from another server or another life), the
  -- counter may be behind tokens already issued: the clock takes over, in a quorum too.
  local floor = tonumber(candidate)
  if marked ~= '' or appended ~= '' then
    floor = math.max(floor, tonumber(micros))
  end
  if token > floor then
    -- The counter is ahead of the candidate: the grant, written with the candidate,
    -- takes the counter's token instead.
    retoken(string.format('%d', token))
  elseif floor > tonumber(candidate) then
    token = floor
    retoken(micros)
  else
    token = floor
  end
  return {1, token, ''}
end

-- Writes the caller's grant over `old` (its reservation, or an expired grant), keeping
-- the key alive for the queue when `flagged`; the answer then names the waiter first in
-- line, which a release through the same driver wakes as soon as it is sent.
local function take(old, flagged)
  if not flagged then
    redis.call('SET', lock, mine, 'PX', ttl_arg)
    return fenced(old)
  end
  redis.call('SET', lock, mine .. ':q', 'PXAT', math.max(ends, now + queue_ttl))
  local answer = fenced(old)
  if answer[1] == 1 then
    local head = redis.call('LINDEX', queue, 0)
    answer[3] = head and string.match(head, '^(%x+):') or ''
  end
  return answer
end

-- Queues the caller behind `old`, the grant or reservation in the lock's key, and marks
-- the key as having waiters.
local function wait_in_line(old, until_ms, flagged)
  if waiter == '' then
    return
  end
  local keep = now + queue_ttl
  if not flagged then
    redis.call('SET', lock, old .. ':q', 'PXAT', math.max(until_ms, keep))
  elseif until_ms < keep then
    redis.call('PEXPIREAT', lock, keep, 'GT')
  end
  if queued and redis.call('LPOS', queue, entry) then
    redis.call('PEXPIREAT', queue, keep, 'GT')
  elseif redis.call('RPUSH', queue, entry) == 1 then
    redis.call('PEXPIREAT', queue, keep)
  else
    redis.call('PEXPIREAT', queue, keep, 'GT')
  end
end

if not old then
  local answer = fenced(nil, true)
  if queued and answer[1] == 1 then
    -- The key had gone while this waiter was queued (a reservation nobody claimed ran
    -- out): leave the queue, and keep the key marked for whoever is still in it.
    redis.call('LREM', queue, 0, entry)
    if redis.call('LLEN', queue) > 0 then
      redis.call('SET', lock, mine .. ':q', 'PXAT', math.max(ends, now + queue_ttl))
    end
  end
  return answer
end

local reserved, id, grant_ends, flagged, blocks, token = parse(old)
if not id then
  -- Not a value robit wrote: held, by whoever wrote it.
  return {0, redis.call('PTTL', lock)}
end
if reserved and id == waiter then
  -- Reserved for the caller by a hand-off (which took it out of the queue).
  return take(old, flagged)
end
if not reserved and waiter ~= '' and id == waiter .. (token or '') and grant_ends > now then
  -- Granted to the caller by a release (release_rest.lua), before this attempt: its
  -- validity counts from the caller's last attempt answered as queued.
  local head = flagged and redis.call('LINDEX', queue, 0)
  return {3, tonumber(token), head and string.match(head, '^(%x+):') or ''}
end
if blocks > now then
  -- Held, or in the lock-delay after its holder's lease expired.
  wait_in_line(old, blocks, flagged)
  return {0, blocks - now}
end
if flagged then
  -- The holder (or the waiter it was reserved for) is gone and others have waited:
  -- hand the lock to the longest-waiting one.
  local next_waiter, window = hand_off(lock, queue, channel, handoff, t, now)
  if next_waiter == waiter then
    return take(old, true)
  elseif next_waiter then
    wait_in_line(stamp('W' .. next_waiter, t, window), now + window, true)
    return {0, window}
  end
end
return take(old, false)

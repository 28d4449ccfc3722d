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
-- The server's identity, as acquire.lua reads it (ARGV[5]); nil if INFO does not name it.
local function identity()
  if ARGV[5] ~= '*' then
    return ARGV[5]
  end
  return server_identity()
end

-- Grants the lock to the waiter of queue entry `head`, taken out of the queue, if the
-- entry names the grant's span ("<id>:<poll ms>:<ttl ms>[+<delay ms>]": a quorum's
-- member leaves it out), as acquire.lua would have granted it to the waiter's claim: its
-- token the larger of the counter's plus one and the clock's, its owner the waiter's id
-- followed by the token's digits (a waiter may be made more than one grant: each has an
-- owner of its own, so that a late release of one never frees another).
-- The waiter needs no claim: it counts its lease from its last attempt answered as
-- queued, sent before now. Publishes "<id>@<token>" and answers it. Returns nil, with
-- the counter as it was, when the counter is missing, marked or another server's: a
-- reservation then makes the waiter claim, through acquire's own checks.
local function grant_to(head, t, now)
  local waiter, ttl, delay = string.match(head, '^(%x+):%d+:(%d+)%+?(%d*)$')
  if not waiter then
    return nil
  end
  local server = identity()
  if not server then
    return nil
  end
  local micros = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
  local last = redis.call('SET', KEYS[3], micros .. server, 'GET')
  local digits, id
  if last then
    digits, id = string.match(last, '^(%d+)(/?%x*)$')
  end
  if not digits or (server ~= '' and id ~= server) then
    if last then
      redis.call('SET', KEYS[3], last)
    else
      redis.call('DEL', KEYS[3])
    end
    return nil
  end
  local token = string.format('%d', math.max(tonumber(digits) + 1, tonumber(micros)))
  if token ~= micros then
    redis.call('SET', KEYS[3], token .. server)
  end
  local span = delay ~= '' and (ttl .. '+' .. delay) or ttl
  local key_ms = tonumber(ttl) + (tonumber(delay) or 0)
  local grant = waiter .. token .. ':' .. t[1] .. ':' .. t[2] .. ':' .. span .. '@' .. token
  -- Others still wait (the queue lives on): the key is marked, and kept alive as
  -- long as the queue at least, as acquire.lua's take does.
  local keep = redis.call('PTTL', KEYS[2])
  if keep == -2 then
    redis.call('SET', KEYS[1], grant, 'PX', key_ms)
  else
    redis.call('SET', KEYS[1], grant .. ':q', 'PXAT', now + math.max(key_ms, keep))
  end
  local answer = waiter .. '@' .. token
  redis.call('PUBLISH', ARGV[2], answer)
  return answer
end

if careful then
  redis.call('DEL', KEYS[1])
end
if ARGV[6] == '1' then
  -- Given back by a quorum's attempt without a majority: handed on now, it would go from
  -- waiter to waiter, none able to win while another holds the lock elsewhere. With
  -- waiters queued, the caller goes back to the head of the queue, where its turn here
  -- was, and the key stays as an ended grant, still marked: the next claim hands it to
  -- the first of them (the caller, if it still waits), waking it then.
  local keep = redis.call('PTTL', KEYS[2])
  if flagged and keep > 0 then
    if ARGV[7] then
      redis.call('LPUSH', KEYS[2], ARGV[7])
    end
    local t = redis.call('TIME')
    redis.call('SET', KEYS[1], stamp(id, t, 0) .. ':q', 'PX', keep)
  end
  return 1
end
local t, now = clock()
local head = redis.call('LPOP', KEYS[2])
if not head then
  return 1
end
-- Granted or reserved to the first waiter; or, when no entry left in the queue is one
-- robit wrote (hand_off skips those), released with nobody waiting.
return grant_to(head, t, now) or hand_off(KEYS[1], KEYS[2], ARGV[2], ARGV[3], t, now, head) or 1

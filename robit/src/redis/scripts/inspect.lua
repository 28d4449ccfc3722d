-- Inspect: what a lock's keys hold, for an operator. Reads only.
-- KEYS[1] lock    see common.lua
-- KEYS[2] queue   the waiters' entries, oldest first
-- Returns {state, id, token, ms, waiters}: state 'free', 'held', 'delay' (in its
-- lock-delay), 'reserved' (for a waiter) or 'foreign' (a value robit did not write, or
-- a key of another type); the owner's (or waiter's) id and the grant's token ('' when
-- none); the ms left until the grant, its lock-delay or the reservation ends (for a
-- foreign key its PTTL: -1 without an expiry); and the queue's length.
-- pcall: a key of another type is an answer, not an error.
local value = redis.pcall('GET', KEYS[1])
local waiters = redis.pcall('LLEN', KEYS[2])
if type(waiters) ~= 'number' then
  waiters = 0
end
if value == false then
  return {'free', '', '', 0, waiters}
end
local reserved, id, ends, _, blocks, token
if type(value) == 'string' then
  reserved, id, ends, _, blocks, token = parse(value)
end
if not id then
  return {'foreign', '', '', redis.call('PTTL', KEYS[1]), waiters}
end
local _, now = clock()
if reserved and ends > now then
  return {'reserved', id, '', ends - now, waiters}
elseif reserved then
  return {'free', '', '', 0, waiters}
elseif ends > now then
  return {'held', id, token or '', ends - now, waiters}
elseif blocks > now then
  return {'delay', id, token or '', blocks - now, waiters}
end
return {'free', '', '', 0, waiters}

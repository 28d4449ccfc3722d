-- Acquire, for many callers at once: each item is one acquire.lua call. The grants that
-- find their lock free and the namespace's counter theirs to issue from take their
-- tokens here, in order, from one reading of the clock and of the counter, which is
-- written back once at the end; every other item runs acquire.lua's whole code.
-- KEYS  item i's lock, queue, fence and quarantine: acquire.lua's KEYS[1] to KEYS[4]
-- ARGV  item by item: its number of arguments, then acquire.lua's ARGV for it
-- Returns one answer per item, in order: what acquire.lua answers it, or its error.
local t = redis.call('TIME')
local micros = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
local clock_token = tonumber(micros)

-- The server's identity, as acquire.lua reads it for an item that asks ('*'): once.
-- '*' if INFO names none: acquire.lua then answers an item it grants with the error
-- that says so.
local here
local function identity()
  here = here or server_identity() or '*'
  return here
end

-- The fencing counters read, by key: {last = the last token issued, server = the
-- identity it ends with, written = whether a token was issued here since}, or false
-- when acquire.lua's whole code must read it (missing, marked, another server's).
-- `read`: their keys in the order first read, for writing back.
local counters, read = {}, {}

local function counter(key, server)
  local known = counters[key]
  if known == nil then
    known = false
    local value = redis.call('GET', key)
    if value and string.sub(value, #value - #server + 1) == server then
      local digits = string.sub(value, 1, #value - #server)
      if string.match(digits, '^%d+$') then
        known = {last = tonumber(digits), server = server, written = false}
      end
    end
    counters[key] = known
    read[#read + 1] = key
  end
  if known and known.server ~= server then
    return false
  end
  return known
end

-- Writes the counter at `key` back, if a token was issued from it here.
local function write_back(key)
  local known = counters[key]
  if known and known.written then
    redis.call('SET', key, string.format('%d', known.last) .. known.server)
    known.written = false
  end
end

-- The uncontended grant, as acquire.lua's first lines make it, with the next token of
-- the counter as read here; nil when the item needs acquire.lua's whole code: a lock
-- already taken, a waiter that may be queued, a lock-delay or a quorum's proposal (the
-- twelfth argument), a counter that is not plainly this server's. Reads the item in
-- place (many.lua): its lock is KEYS[keys + 1] and its fence KEYS[keys + 3]; its
-- owner, its key's lifetime and `queued` are ARGV[args + 1], [args + 2], [args + 10].
local function quick(keys, args, count, server)
  if count > 11 or ARGV[args + 10] == '1' then
    return nil
  end
  local known = counter(KEYS[keys + 3], server)
  if not known then
    return nil
  end
  local token = math.max(clock_token, known.last + 1)
  local key_ms = ARGV[args + 2]
  local mine = ARGV[args + 1] .. ':' .. t[1] .. ':' .. t[2] .. ':' .. key_ms .. '@'
    .. string.format('%d', token)
  if redis.call('SET', KEYS[keys + 1], mine, 'NX', 'PX', key_ms, 'GET') then
    return nil
  end
  known.last, known.written = token, true
  return {1, token, ''}
end

local function acquire(keys, args, count)
  local server = ARGV[args + 11]
  if server == '*' then
    server = identity()
  end
  local answer = quick(keys, args, count, server)
  if answer then
    return answer
  end
  local k, a = tables(4, keys, args, count)
  a[11] = server
  -- acquire.lua reads and writes the counter itself: give it the counter as it stands,
  -- and read it again after.
  write_back(k[3])
  counters[k[3]] = nil
  return acquire_one(k, a)
end

local answers = answer_all(4, acquire)
for _, key in ipairs(read) do
  write_back(key)
end
return answers

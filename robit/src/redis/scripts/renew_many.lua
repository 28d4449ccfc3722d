-- Renew, for many grants at once: each item is one renew.lua call. A grant without a
-- lock-delay and with nobody waiting is renewed here, from one reading of the clock:
-- its key expires when the grant ends (its PX was set with the TTL right after the TIME
-- its value records, so it may outlive the recorded end by a millisecond or so), and a
-- key still there holding the caller's owner token is the caller's grant. Where
-- renew.lua would find such a grant just ended and refuse, this renews it: harmless, as
-- nobody else can have taken a key that still holds it, and the holder's validity counts
-- from its renewal's send. Every other item runs renew.lua's whole code.
-- KEYS  item i's lock: renew.lua's KEYS[1]
-- ARGV  item by item: its number of arguments, then renew.lua's ARGV for it
-- Returns one answer per item, in order: what renew.lua answers it, or its error.
local t

local function renew(keys, args, count)
  if count == 2 then
    local lock, owner = KEYS[keys + 1], ARGV[args + 1]
    -- pcall: a key of another type is simply not the caller's grant.
    local value = redis.pcall('GET', lock)
    if type(value) ~= 'string' then
      return 0
    end
    if string.sub(value, 1, #owner + 1) == owner .. ':' and string.sub(value, -2) ~= ':q' then
      local token = string.match(value, '@%d+$') or ''
      t = t or redis.call('TIME')
      local ttl = ARGV[args + 2]
      redis.call('SET', lock, owner .. ':' .. t[1] .. ':' .. t[2] .. ':' .. ttl .. token, 'PX', ttl)
      return 1
    end
  end
  return renew_one(tables(1, keys, args, count))
end

return answer_all(1, renew)

-- Many calls of one script, in one: the calls that callers of one driver made while
-- another of the same kind was in flight (redis/batch.rs). Each call is an item: its
-- keys, as many for every item, all before any argument; then, item by item, how many
-- arguments it has and the arguments. Included, after common.lua, in each batch script,
-- which defines the one script's code as a function of its KEYS and ARGV and runs it
-- for every item.

-- The items, one at a time: their number, keys and arguments, as the one script
-- would be given them. `per`: how many keys an item has.
local function items(per)
  local i, at = 0, 1
  return function()
    if per * i >= #KEYS then
      return nil
    end
    i = i + 1
    local keys, argv = {}, {}
    for k = 1, per do
      keys[k] = KEYS[per * (i - 1) + k]
    end
    local count = tonumber(ARGV[at])
    for a = 1, count do
      argv[a] = ARGV[at + a]
    end
    at = at + count + 1
    return i, keys, argv
  end
end

-- What `one` answers for an item, or its error, as an error reply of that item's
-- alone: one caller's bad request fails only that caller.
local function answer_of(one, keys, argv)
  local ok, answer = pcall(one, keys, argv)
  if ok then
    return answer
  end
  if type(answer) == 'table' and answer.err then
    return answer
  end
  return redis.error_reply(tostring(answer))
end

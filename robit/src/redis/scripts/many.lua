-- Many calls of one script, in one: the calls that callers of one driver made while
-- another of the same kind was in flight (redis/transport/batch/). Each call is an
-- item: its keys, as many for every item, all before any argument; then, item by item,
-- how many arguments it has and the arguments. Included, after common.lua, in each batch
-- script, which defines the one script's code as a function of its KEYS and ARGV and
-- runs it for the items its own quicker path leaves.

-- The items, one at a time: their number; where their keys start in KEYS and their
-- arguments in ARGV (offsets: an item's first key is KEYS[keys + 1], and its first
-- argument is ARGV[args + 1]); and how many arguments they have. `per`: how many keys an
-- item has.
-- Nothing is copied: a quick path reads the item in place.
local function items(per)
  local i, count, at = 0, #KEYS / per, 1
  return function()
    if i >= count then
      return nil
    end
    i = i + 1
    local args = at
    at = at + tonumber(ARGV[at]) + 1
    return i, per * (i - 1), args, tonumber(ARGV[args])
  end
end

-- An item's keys and arguments as the one script takes them, as tables of their own.
local function tables(per, keys, args, count)
  local k, a = {}, {}
  for j = 1, per do
    k[j] = KEYS[keys + j]
  end
  for j = 1, count do
    a[j] = ARGV[args + j]
  end
  return k, a
end

-- What `one` answers for an item, or its error, as an error reply of that item's
-- alone: one caller's bad request fails only that caller.
local function answer_of(one, keys, args, count)
  local ok, answer = pcall(one, keys, args, count)
  if ok then
    return answer
  end
  if type(answer) == 'table' and answer.err then
    return answer
  end
  return redis.error_reply(tostring(answer))
end

-- Every item's answer, in order, from `one` (what answer_of makes of it). `per`: how many
-- keys an item has.
local function answer_all(per, one)
  local answers = {}
  for i, keys, args, count in items(per) do
    answers[i] = answer_of(one, keys, args, count)
  end
  return answers
end

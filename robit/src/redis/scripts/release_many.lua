-- Release, for many grants at once: each item is one release.lua call.
-- KEYS  item i's lock, queue and fence: release.lua's KEYS[1] to KEYS[3]
-- ARGV  item by item: its number of arguments, then release.lua's ARGV for it
-- Returns one answer per item, in order: what release.lua answers it, or its error.
local function release(keys, args, count)
  return release_one(tables(3, keys, args, count))
end

return answer_all(3, release)

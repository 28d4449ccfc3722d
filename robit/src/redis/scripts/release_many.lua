-- Release, for many grants at once: each item is one release.lua call.
-- KEYS  item i's lock and queue: release.lua's KEYS[1] and KEYS[2]
-- ARGV  item by item: its number of arguments, then release.lua's ARGV for it
-- Returns one answer per item, in order: what release.lua answers it, or its error.
local answers = {}
for i, keys, argv in items(2) do
  answers[i] = answer_of(release_one, keys, argv)
end
return answers

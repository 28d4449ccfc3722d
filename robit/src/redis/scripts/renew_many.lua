-- Renew, for many grants at once: each item is one renew.lua call.
-- KEYS  item i's lock: renew.lua's KEYS[1]
-- ARGV  item by item: its number of arguments, then renew.lua's ARGV for it
-- Returns one answer per item, in order: what renew.lua answers it, or its error.
local answers = {}
for i, keys, argv in items(1) do
  answers[i] = answer_of(renew_one, keys, argv)
end
return answers

-- Release: delete the grant only if it is still the caller's, handing the lock to the
-- longest-waiting waiter if the key says waiters may be queued: granted to it outright
-- when its queue entry says how (release_rest.lua), or else reserved for it to claim.
-- Uncontended, one GETDEL: a value that turns out not to be the caller's is put back as
-- it was. A caller that knows its grant is gone (a renewal found it so) reads first
-- instead.
-- KEYS[1] lock          see common.lua
-- KEYS[2] queue         the waiters' entries, oldest first
-- KEYS[3] fence         the namespace's last fencing token (see acquire.lua)
-- ARGV[1] owner         the caller's owner token
-- ARGV[2] channel       where hand-offs are published
-- ARGV[3] handoff_ms    a hand-off's reservation window, at least
-- ARGV[4] careful       '1': read before deleting
-- ARGV[5] server        the identity of the server, as acquire takes it ('*', or ''
--                       with failover detection off)
-- ARGV[6] quietly?      for a quorum's member grant given back only: '1', hand the lock
--                       to nobody now
-- ARGV[7] entry?        with quietly, when the caller waits: its queue entry
-- Returns 0 not the caller's (already gone, or someone else's); 1 released with nobody
-- waiting; "<id>@<token>" when the lock is now granted to waiter <id> with fencing token
-- <token>; or the id of the waiter the lock is now reserved for. Either way the waiter
-- is named so that one in the caller's own process is told without waiting for the
-- published notification.
-- pcall: a key of another type is simply not the caller's grant (GETDEL leaves it).
-- The caller's own unmarked grant is handled first, before common.lua's functions are
-- defined; the rest is in release_rest.lua.
local careful = ARGV[4] == '1'
local old = redis.pcall(careful and 'GET' or 'GETDEL', KEYS[1])
if type(old) ~= 'string' then
  return 0
end
-- The caller's own grant with nobody waiting, told apart without parsing it.
local ours = string.sub(old, 1, #ARGV[1] + 1) == ARGV[1] .. ':'
if ours and string.sub(old, -2) ~= ':q' then
  if careful then
    redis.call('DEL', KEYS[1])
  end
  return 1
end

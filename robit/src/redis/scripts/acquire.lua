-- Acquire: one round trip. Grants the lock, queues the caller fairly, or refuses during
-- a quarantine after state loss.
--
-- The uncontended path comes first, before any function is defined (a definition costs
-- every call that reaches it, used or not): TIME, one SET on the lock, INFO for the
-- server's identity (with failover detection on) and one SET on the fencing counter,
-- with no number turned into text. Everything else follows common.lua,
-- in acquire_rest.lua.
--
-- KEYS[1] lock            see common.lua
-- KEYS[2] queue           queue entries in arrival order, expiring when nobody refreshes it
-- KEYS[3] fence           the namespace's last fencing token (no TTL), followed by the
--                         identity of the server that issued it: "<token>/<identity>";
--                         "<token>q/<identity>" while a quarantine may be running
-- KEYS[4] quarantine      present while grants are suspended after state loss ("1"), or
--                         because the namespace was written on another server ("moved")
-- ARGV[1] owner           the caller's owner token
-- ARGV[2] key_ms          the key's lifetime: the TTL, plus any lock-delay
-- ARGV[3] waiter          the waiter's id ('' for a single try)
-- ARGV[4] entry           its queue entry ('<id>:<poll ms>[:<span>]', common.lua; '' for
--                         a single try)
-- ARGV[5] queue_ttl_ms    how long the queue lives without a refresh
-- ARGV[6] channel         where hand-offs are published
-- ARGV[7] handoff_ms      a hand-off's reservation window, at least
-- ARGV[8] quarantine_ms   how long grants are suspended after state loss (0: never)
-- ARGV[9] lost            '1': a missing counter means lost state; '0': a new namespace
-- ARGV[10] queued         '1': an earlier attempt of this waiter may have queued it
-- ARGV[11] server         the identity of the server: '*' the script reads it here, from
--                         INFO, on every call that grants (an attempt that queues needs
--                         none), since a connection may outlive its server's role or be
--                         redirected; '/<hex digits>' as given; '' with failover
--                         detection off
-- ARGV[12] extras?        sent with a lock-delay, or by a quorum's member: how the grant's
--                         value ends, '<span>', '@<proposal>' or '<span>@<proposal>'; the
--                         span is '<ttl ms>+<delay ms>' (without it, key_ms is the TTL),
--                         the proposal the quorum's proposed token (decimal digits)
-- Returns {1, fence, next} granted (next: the waiter first in line, or ""; {1, fence, "", 1}
-- when the grant created the namespace), {3, fence, next} granted to the caller by a
-- release before this attempt (release_rest.lua), {0, ms} held (ms: until the holder's grant or the
-- reservation ends; -1: no expiry), {2, ms} quarantined (-1: until the key is deleted;
-- {2, ms, 1} when the quarantine is there because the namespace was written on another
-- server, or another life of this one).
local server = ARGV[11]
local t = redis.call('TIME')
-- Unix µs; the candidate for the token: the clock's, or in a quorum the proposed one, so
-- that the quorum's servers answer the same token (redlock.rs); and the grant as the key
-- will hold it (see common.lua). Should the token turn out larger than the candidate,
-- the grant is written again with it.
local micros = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
local candidate, span = micros, nil
if ARGV[12] then
  local given, proposal = string.match(ARGV[12], '^([%d+]*)@?(%d*)$')
  if not given then
    return redis.error_reply('ERR robit: extras ' .. ARGV[12] .. ' are not <span>@<proposal>')
  end
  if given ~= '' then
    span = given
  end
  if proposal ~= '' then
    candidate = proposal
  end
end
local mine = ARGV[1] .. ':' .. t[1] .. ':' .. t[2] .. ':' .. (span or ARGV[2]) .. '@' .. candidate
local old = redis.call('SET', KEYS[1], mine, 'NX', 'PX', ARGV[2], 'GET')
-- The fencing counter as it was, read as the grant's token is written: `nil` until then.
-- The grant stands here when the last token is below the candidate and was issued by
-- this same server (its identity follows the token).
local last
if not old then
  if server == '*' then
    local info = redis.call('INFO', 'server', 'replication')
    local run, replication = string.match(info, 'run_id:(%x+)'), string.match(info, 'master_replid:(%x+)')
    if not run or not replication then
      redis.call('DEL', KEYS[1])
      return redis.error_reply('ERR robit: INFO names no run_id or master_replid; use Redis 7.0 '
        .. 'or later, or turn failover detection off')
    end
    server = '/' .. string.lower(string.sub(run, 1, 16) .. string.sub(replication, 1, 16))
  end
  last = redis.call('SET', KEYS[3], candidate .. server, 'GET')
  if last and ARGV[10] ~= '1' then
    local cut = #last - #server
    local number = tonumber(string.sub(last, 1, cut))
    if number and number < tonumber(candidate) and string.sub(last, cut + 1) == server then
      return {1, tonumber(candidate), ''}
    end
  end
end


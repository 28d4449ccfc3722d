-- Create: a new namespace's fencing counter in one bucket, in cluster mode (keys.rs), so
-- that from then on a counter missing from any bucket means lost state, as a missing
-- counter does for a namespace on one server. Writes nothing where the counter exists.
-- KEYS[1] fence    the bucket's fencing counter (see acquire.lua)
-- ARGV[1] server   the identity of the server ('*': read it here, from INFO; '': failover
--                  detection off)
-- Returns 1 created, 0 there already.
local server = ARGV[1]
if server == '*' then
  local info = redis.call('INFO', 'server', 'replication')
  local run, replication = string.match(info, 'run_id:(%x+)'), string.match(info, 'master_replid:(%x+)')
  if not run or not replication then
    return redis.error_reply('ERR robit: INFO names no run_id or master_replid; use Redis 7.0 '
      .. 'or later, or turn failover detection off')
  end
  server = '/' .. string.lower(string.sub(run, 1, 16) .. string.sub(replication, 1, 16))
end
local t = redis.call('TIME')
local micros = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
return redis.call('SET', KEYS[1], micros .. server, 'NX') and 1 or 0

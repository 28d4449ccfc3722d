-- The scripting environment of one simulated Redis server, built once per server as
-- Redis 7 builds its own: the globals a script sees (read-only, and an error for one
-- that does not exist), the `redis` library around the server's commands, Redis's
-- `math.random`, and the error handler that words a failed script's reply.
--
-- Arguments, from the Rust side: `rust`, the table of the Rust functions this is built
-- with (`library.rs`), and the server's version and its number. Answers `compile` and
-- `run`, below.
--
-- Functions that can fail are Rust's (C functions, as in Redis), so that `return
-- redis.call(...)` keeps the script's frame, and its line, on the stack when the call
-- fails. Their errors reach Lua as an opaque value; the handler, `pcall` and `xpcall`
-- turn it into what Redis raises with `take_raised`: a failed command's error table,
-- or Lua's message for a bad argument.
local rust, version, version_num = ...
local error_text, take_raised = rust.error_text, rust.take_raised

local error, type, tostring, select = error, type, tostring, select
local setmetatable, rawset, xpcall, pcall = setmetatable, rawset, xpcall, pcall

local READONLY = 'Attempt to modify a readonly table'

-- The globals scripts see (built below).
local globals

-- Tables a script cannot change (Redis 7 marks its globals and libraries read-only).
local readonly = setmetatable({}, { __mode = 'k' })

local function protect(real)
  local proxy = setmetatable({}, {
    __index = real,
    __newindex = function() error(READONLY, 2) end,
    __metatable = false,
  })
  readonly[proxy] = true
  return proxy
end

-- Libraries Redis has and this server does not: present, as in Redis, but any use
-- says why it fails.
local function missing(name)
  return setmetatable({}, {
    __index = function()
      error('the simulated Redis does not provide the ' .. name .. ' library', 2)
    end,
    __newindex = function() error(READONLY, 2) end,
    __metatable = false,
  })
end

local mathlib = {}
for name, value in pairs(math) do mathlib[name] = value end
mathlib.random, mathlib.randomseed = rust.random, rust.randomseed

local function wrong_arguments() return { err = 'ERR wrong number or type of arguments' } end

local redis = {
  call = rust.call,
  pcall = rust.pcall,
  error_reply = function(...)
    local text = ...
    if select('#', ...) ~= 1 or type(text) ~= 'string' then return wrong_arguments() end
    if text:sub(1, 1) ~= '-' then text = '-' .. text end
    return { err = error_text(text) }
  end,
  status_reply = function(...)
    local text = ...
    if select('#', ...) ~= 1 or type(text) ~= 'string' then return wrong_arguments() end
    return { ok = text }
  end,
  sha1hex = rust.sha1hex,
  log = rust.log,
  setresp = rust.setresp,
  acl_check_cmd = rust.acl_check_cmd,
  set_repl = function() end,
  replicate_commands = function() return true end,
  breakpoint = function() return false end,
  debug = function() end,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
  REDIS_VERSION = version, REDIS_VERSION_NUM = version_num,
}

-- What a script's globals hold: Lua's base library without what Redis removes (files,
-- modules, environments, printing), and the libraries.
local visible = {}
for _, name in ipairs({
  'assert', 'collectgarbage', 'error', 'gcinfo', 'getmetatable', 'ipairs',
  'next', 'pairs', 'pcall', 'rawequal', 'rawget', 'select', 'setmetatable',
  'tonumber', 'tostring', 'type', 'unpack', 'xpcall', '_VERSION',
}) do
  visible[name] = _G[name]
end
-- An error raised by one of the Rust functions, as Redis raises it: `where` is the
-- position of the script's line, when raised from it.
local function as_raised(err, where)
  if type(err) == 'userdata' then
    local text, lua_message = take_raised()
    if lua_message then return (where or '') .. text end
    if text then return { err = text } end
  end
  return err
end
-- A script stopped for running too long stays stopped: its own pcall cannot catch it.
local stopped = rust.stopped
local function caught(ok, ...)
  if ok then return ok, ... end
  local err = ...
  if stopped() then error(err, 0) end
  return ok, as_raised(err)
end
visible.pcall = function(f, ...) return caught(pcall(f, ...)) end
visible.xpcall = function(f, handle)
  return caught(xpcall(f, function(err)
    if stopped() then return err end
    return handle(as_raised(err))
  end))
end
local resume = coroutine.resume
local coroutines = {}
for name, value in pairs(coroutine) do coroutines[name] = value end
coroutines.resume = function(co, ...) return caught(resume(co, ...)) end

-- Chunks a script compiles run with the script's globals, and only from source: Redis
-- refuses bytecode (Lua 5.1 does not verify it).
local function sandboxed(f, message)
  if f then setfenv(f, globals) end
  return f, message
end
local function source_only(text)
  if type(text) == 'string' and text:byte(1) == 27 then
    return nil, 'the simulated Redis does not load Lua bytecode, only source'
  end
end
visible.loadstring = function(text, name)
  local refused, message = source_only(text)
  if message then return refused, message end
  return sandboxed(loadstring(text, name))
end
visible.load = function(reader, name)
  if type(reader) ~= 'function' then
    error("bad argument #1 to 'load' (function expected, got " .. type(reader) .. ')', 2)
  end
  local pieces = {}
  for piece in reader do
    if piece == '' then break end
    pieces[#pieces + 1] = piece
  end
  return visible.loadstring(table.concat(pieces), name)
end
visible.rawset = function(t, k, v)
  if readonly[t] then error(READONLY, 0) end
  return rawset(t, k, v)
end
visible.string = protect(string)
visible.table = protect(table)
visible.math = protect(mathlib)
visible.coroutine = protect(coroutines)
visible.redis = protect(redis)
for _, name in ipairs({ 'bit', 'cjson', 'cmsgpack', 'struct' }) do
  visible[name] = missing(name)
end

globals = setmetatable({}, {
  __index = function(_, name)
    local value = visible[name]
    if value == nil then
      error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
    end
    return value
  end,
  __newindex = function() error(READONLY, 2) end,
  __metatable = false,
})
readonly[globals] = true
visible._G = globals

-- The line of the innermost script frame on the stack, found without the debug
-- library: `error` words the position of the frame at a given level, which is empty
-- for C frames and names this prelude for its own (C in Redis, so skipped here too).
local function script_line()
  for level = 2, 200 do
    local _, where = pcall(error, '', level)
    local line = where:match('^user_script:(%d+): $')
    if line then return line end
  end
end

-- Redis 7's error handler: an error that is not already a table becomes one with the
-- ERR code, and the line of the script where it was raised is attached.
local function handler(err)
  local line = script_line()
  err = as_raised(err, line and 'user_script:' .. line .. ': ')
  if type(err) ~= 'table' then
    err = { err = 'ERR ' .. tostring(err) }
  end
  if line then
    err.source = '@user_script'
    err.line = line
  end
  return err
end

-- Compiles a script's body as Redis does: a chunk named @user_script, run with the
-- read-only globals. Answers the function, or nil and Lua's message.
local function compile(body)
  local f, message = loadstring(body, '@user_script')
  if not f then return nil, message end
  setfenv(f, globals)
  return f
end

-- Runs a compiled script with its `nkeys` keys, then its arguments: true and its
-- first value, or false and the error table.
local function run(f, nkeys, ...)
  local keys, argv = { ... }, { select(nkeys + 1, ...) }
  for i = #keys, nkeys + 1, -1 do keys[i] = nil end
  visible.KEYS, visible.ARGV = keys, argv
  local ok, result = xpcall(f, handler)
  visible.KEYS, visible.ARGV = nil, nil
  return ok, result
end

rust.randomseed(0)
return compile, run

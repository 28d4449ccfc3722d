//! Lua 5.1 inside the simulated Redis, run as Redis 7 runs scripts.
//!
//! Any script a client sends runs, byte for byte, in a real Lua 5.1 interpreter (built
//! from source with the simulator, so nothing is needed on the machine). One [`Vm`] per
//! server holds the environment Redis gives scripts (`prelude.lua`): read-only globals
//! without files, modules or printing; `redis.call`, `redis.pcall`, `redis.error_reply`,
//! `redis.status_reply`, `redis.sha1hex`; Redis's `math.random`. A script's commands run
//! through the server's own command table, one after another at the script's instant,
//! so a script is atomic, as in Redis, and errors are worded as Redis words them (a
//! differential test against a real redis-server holds both to that).
//!
//! What is left out: the `cjson`, `cmsgpack`, `struct` and `bit` libraries (a script
//! that uses one fails, saying so), RESP3 (`redis.setresp(3)`), script flags (`#!lua`),
//! and busy scripts: a script that runs more than [`INSTRUCTION_LIMIT`] instructions is
//! stopped with an error instead of keeping the server busy.

mod convert;
mod rand48;

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Value, VmState};

use self::convert::{error_table, error_text, one_line, to_lua, to_reply};
use self::rand48::Rand48;
use super::commands::{VERSION, VERSION_NUM, script_command};
use super::exec::Exec;
use super::resp::Frame;
use super::scripts::sha1_hex;

/// Lua instructions one script may run before it is stopped.
pub(crate) const INSTRUCTION_LIMIT: u32 = 100_000_000;
/// Instructions between two looks at a script's count.
const HOOK_EVERY: u32 = 1_000_000;
/// The memory the scripts of one server may hold.
const MEMORY_LIMIT: usize = 256 << 20;

/// One server's Lua: the interpreter with Redis's script environment. Clones share it.
#[derive(Clone)]
pub(crate) struct Vm {
    lua: Lua,
    compile: Function,
    run: Function,
    /// How many times the hook has seen the running script pass `HOOK_EVERY` more.
    spent: Arc<AtomicU32>,
    /// The error of the Rust function that failed last, until the prelude takes it.
    raised: Raised,
}

/// A failed Rust function's error: a failed command's error text, or (`true`) Lua's
/// message for a bad argument.
type Raised = Arc<Mutex<Option<(Vec<u8>, bool)>>>;

/// Records `error` for the prelude, and fails the Rust function that met it.
fn raise<T>(raised: &Raised, error: (Vec<u8>, bool)) -> mlua::Result<T> {
    *raised.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
    Err(mlua::Error::runtime("raised; see take_raised"))
}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vm").finish_non_exhaustive()
    }
}

/// A script that failed to start or to finish, as the reply Redis sends.
pub(crate) type Failed = Frame;

impl Vm {
    /// A fresh interpreter with the script environment built.
    pub(crate) fn new() -> mlua::Result<Self> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::new())?;
        lua.set_memory_limit(MEMORY_LIMIT)?;
        let raised = Raised::default();
        let rand = Arc::new(Rand48::default());
        let (seeded, failed) = (Arc::clone(&rand), Arc::clone(&raised));
        let random = lua.create_function(move |lua, args: MultiValue| {
            rand.random(lua, &args)
                .or_else(|message| raise(&failed, (message.into_bytes(), true)))
        })?;
        let failed = Arc::clone(&raised);
        let randomseed = lua.create_function(move |lua, args: MultiValue| {
            seeded
                .randomseed(lua, &args)
                .or_else(|message| raise(&failed, (message.into_bytes(), true)))
        })?;
        let error_text = lua.create_function(|lua, text: mlua::String| {
            lua.create_string(error_text(&text.as_bytes()))
        })?;
        let checked = checked(&lua, &raised)?;
        let taken = Arc::clone(&raised);
        let take_raised = lua.create_function(move |lua, ()| {
            let error = taken.lock().unwrap_or_else(PoisonError::into_inner).take();
            let Some((text, lua_message)) = error else {
                return Ok((None, false));
            };
            Ok((Some(lua.create_string(text)?), lua_message))
        })?;
        let (compile, run) = lua
            .load(include_str!("prelude.lua"))
            .set_name("=robit-sim prelude")
            .call::<(Function, Function)>((
                error_text,
                checked,
                random,
                randomseed,
                take_raised,
                VERSION,
                VERSION_NUM,
            ))?;
        let spent = Arc::new(AtomicU32::new(0));
        let counted = Arc::clone(&spent);
        let every = HookTriggers::new().every_nth_instruction(HOOK_EVERY);
        lua.set_hook(every, move |_, _| {
            if counted.fetch_add(1, Ordering::Relaxed) + 1 >= INSTRUCTION_LIMIT / HOOK_EVERY {
                return Err(mlua::Error::runtime("instruction limit"));
            }
            Ok(VmState::Continue)
        })?;
        Ok(Self {
            lua,
            compile,
            run,
            spent,
            raised,
        })
    }

    /// Compiles a script's body, as EVAL and SCRIPT LOAD do before anything runs.
    pub(crate) fn compile(&self, body: &[u8]) -> Result<Function, Failed> {
        let compiled = self
            .lua
            .create_string(body)
            .and_then(|body| self.compile.call::<(Option<Function>, Value)>(body));
        match compiled {
            Ok((Some(function), _)) => Ok(function),
            Ok((None, message)) => {
                let mut reply = b"ERR Error compiling script (new function): ".to_vec();
                if let Value::String(message) = message {
                    reply.extend_from_slice(&message.as_bytes());
                }
                Err(Frame::Error(one_line(&reply)))
            }
            Err(error) => Err(lua_failed(&error)),
        }
    }

    /// Runs a compiled script (whose SHA1 is `sha`) with its keys and arguments; its
    /// commands run in `exec`, at `exec`'s instant.
    pub(crate) fn run(
        &self,
        exec: &mut Exec<'_>,
        script: &Function,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
    ) -> Frame {
        self.spent.store(0, Ordering::Relaxed);
        *self.raised.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let exec = RefCell::new(exec);
        // One command of the script: its reply, or its error as Redis's text.
        let command = |args: &MultiValue| -> Result<Frame, Vec<u8>> {
            let args =
                convert::arguments(args).map_err(|message| error_text(message.as_bytes()))?;
            match script_command(&mut exec.borrow_mut(), &args) {
                Frame::Error(message) => Err(error_text(&[b"-", &message[..]].concat())),
                reply => Ok(reply),
            }
        };
        let outcome = self.lua.scope(|scope| {
            let call = scope.create_function(|lua, args: MultiValue| match command(&args) {
                Ok(reply) => to_lua(lua, reply),
                Err(text) => raise(&self.raised, (text, false)),
            })?;
            let pcall = scope.create_function(|lua, args: MultiValue| match command(&args) {
                Ok(reply) => to_lua(lua, reply),
                Err(text) => Ok(Value::Table(error_table(lua, &text)?)),
            })?;
            let keys = self.strings(keys)?;
            let argv = self.strings(argv)?;
            let (ok, result) = self
                .run
                .call::<(bool, Value)>((script, call, pcall, keys, argv))?;
            if ok {
                return to_reply(&result);
            }
            Ok(failure(&result, sha))
        });
        if self.spent.load(Ordering::Relaxed) >= INSTRUCTION_LIMIT / HOOK_EVERY {
            return Frame::error(format!(
                "ERR the simulated Redis stopped script {sha} after {INSTRUCTION_LIMIT} Lua \
                 instructions (a script this long would keep a real Redis busy)"
            ));
        }
        outcome.unwrap_or_else(|error| lua_failed(&error))
    }
}

impl Vm {
    /// `KEYS` or `ARGV`: a Lua array of strings.
    fn strings(&self, items: &[Vec<u8>]) -> mlua::Result<mlua::Table> {
        let strings = items.iter().map(|item| self.lua.create_string(item));
        self.lua
            .create_sequence_from(strings.collect::<mlua::Result<Vec<_>>>()?)
    }
}

/// The `redis` functions that check their arguments, raising Redis's errors:
/// `sha1hex`, `log`, `setresp`, `acl_check_cmd`.
fn checked(lua: &Lua, raised: &Raised) -> mlua::Result<mlua::Table> {
    let table = lua.create_table()?;
    let failed = Arc::clone(raised);
    let sha1hex = lua.create_function(move |lua, args: MultiValue| {
        let text = match &args.iter().collect::<Vec<_>>()[..] {
            [text] => lua.coerce_string((*text).clone())?,
            _ => None,
        };
        match text {
            Some(text) => Ok(sha1_hex(&text.as_bytes())),
            None => raise(&failed, (b"ERR wrong number of arguments".to_vec(), false)),
        }
    })?;
    table.raw_set("sha1hex", sha1hex)?;
    let failed = Arc::clone(raised);
    let log = lua.create_function(move |_, args: MultiValue| {
        if args.len() < 2 {
            let text = b"ERR redis.log() requires two arguments or more.".to_vec();
            return raise(&failed, (text, false));
        }
        Ok(())
    })?;
    table.raw_set("log", log)?;
    let failed = Arc::clone(raised);
    let setresp = lua.create_function(move |_, args: MultiValue| {
        if !matches!(args.front(), Some(Value::Number(resp)) if *resp == 2.0) {
            let text = b"ERR the simulated Redis answers scripts in RESP2 only".to_vec();
            return raise(&failed, (text, false));
        }
        Ok(())
    })?;
    table.raw_set("setresp", setresp)?;
    let failed = Arc::clone(raised);
    let acl = lua.create_function(move |_, _: MultiValue| -> mlua::Result<()> {
        let text = b"ERR the simulated Redis has no ACLs: redis.acl_check_cmd is not provided";
        raise(&failed, (text.to_vec(), false))
    })?;
    table.raw_set("acl_check_cmd", acl)?;
    Ok(table)
}

/// The reply to a script that raised `error` (a table, from the error handler):
/// `<err> script: <sha>, on @user_script:<line>.`
fn failure(error: &Value, sha: &str) -> Frame {
    let Value::Table(table) = error else {
        return Frame::error(format!("ERR Error running script {sha}: a non-table error"));
    };
    let Ok(Value::String(message)) = table.raw_get::<Value>("err") else {
        return Frame::error(format!(
            "ERR Error running script {sha}: it raised a table without an 'err' string"
        ));
    };
    let mut reply = message.as_bytes().to_vec();
    if let Ok(Value::String(line)) = table.raw_get::<Value>("line") {
        let line = line.to_string_lossy();
        reply.extend_from_slice(format!(" script: {sha}, on @user_script:{line}.").as_bytes());
    }
    Frame::Error(one_line(&reply))
}

/// A failure of the interpreter itself (out of memory, or a bug here).
fn lua_failed(error: &mlua::Error) -> Frame {
    Frame::Error(one_line(
        format!("ERR the simulated Redis's Lua failed: {error}").as_bytes(),
    ))
}

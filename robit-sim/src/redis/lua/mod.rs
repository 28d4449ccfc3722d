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
mod library;
mod rand48;

use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Value, Variadic, VmState};

use self::convert::{one_line, to_reply};
use self::library::{Running, Shared};
use super::commands::{VERSION, VERSION_NUM};
use super::exec::Exec;
use super::resp::Frame;

/// Lua instructions one script may run before it is stopped.
pub(crate) const INSTRUCTION_LIMIT: u32 = 100_000_000;
/// Instructions between two looks at a script's count.
const HOOK_EVERY: u32 = 1_000_000;
/// The first byte of Lua bytecode, which the server refuses to load (as Redis does).
const BYTECODE: u8 = 0x1b;
/// The memory the scripts of one server may hold.
const MEMORY_LIMIT: usize = 256 << 20;

/// One server's Lua: the interpreter with Redis's script environment. Clones share it.
#[derive(Clone)]
pub(crate) struct Vm {
    lua: Lua,
    compile: Function,
    run: Function,
    shared: Shared,
}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vm").finish_non_exhaustive()
    }
}

/// A script that failed to start or to finish, as the reply Redis sends.
pub(crate) type Failed = Frame;

/// SHA1 in lower-case hex, as Redis names scripts.
pub(crate) fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

impl Vm {
    /// A fresh interpreter with the script environment built.
    pub(crate) fn new() -> mlua::Result<Self> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::new())?;
        lua.set_memory_limit(MEMORY_LIMIT)?;
        let shared = Shared::default();
        let functions = library::functions(&lua, &shared)?;
        let (compile, run) = lua
            .load(include_str!("prelude.lua"))
            .set_name("=robit-sim prelude")
            .call::<(Function, Function)>((functions, VERSION, VERSION_NUM))?;
        let spent = std::sync::Arc::clone(&shared.spent);
        let every = HookTriggers::new().every_nth_instruction(HOOK_EVERY);
        lua.set_hook(every, move |_, _| {
            if spent.fetch_add(1, Ordering::Relaxed) + 1 >= INSTRUCTION_LIMIT / HOOK_EVERY {
                return Err(mlua::Error::runtime("instruction limit"));
            }
            Ok(VmState::Continue)
        })?;
        Ok(Self {
            lua,
            compile,
            run,
            shared,
        })
    }

    /// Compiles a script's body, as EVAL and SCRIPT LOAD do before anything runs.
    pub(crate) fn compile(&self, body: &[u8]) -> Result<Function, Failed> {
        if body.first() == Some(&BYTECODE) {
            return Err(Frame::error(
                "ERR Error compiling script (new function): user_script: the simulated \
                 Redis does not load Lua bytecode, only source",
            ));
        }
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
    /// commands run on `exec`'s server, at `exec`'s instant.
    pub(crate) fn run(
        &self,
        exec: &mut Exec<'_>,
        script: &Function,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
    ) -> Frame {
        self.shared.spent.store(0, Ordering::Relaxed);
        *self
            .shared
            .raised
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        let running = Running {
            data: std::mem::take(exec.data),
            channels: std::mem::take(exec.channels),
            events: std::mem::take(exec.events),
            now: exec.now,
            peer: exec.peer.clone(),
            life: exec.life,
        };
        *self.running() = Some(running);
        let outcome = self.call(script, sha, keys, argv);
        if let Some(running) = self.running().take() {
            *exec.data = running.data;
            *exec.channels = running.channels;
            *exec.events = running.events;
        }
        if self.shared.spent.load(Ordering::Relaxed) >= INSTRUCTION_LIMIT / HOOK_EVERY {
            return Frame::error(format!(
                "ERR the simulated Redis stopped script {sha} after {INSTRUCTION_LIMIT} Lua \
                 instructions (a script this long would keep a real Redis busy)"
            ));
        }
        outcome.unwrap_or_else(|error| lua_failed(&error))
    }

    fn running(&self) -> std::sync::MutexGuard<'_, Option<Running>> {
        self.shared
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Calls the prelude's `run(f, #KEYS, KEYS..., ARGV...)`. Text arguments (all of
    /// them, in practice) go onto Lua's stack directly; others as Lua strings.
    fn call(
        &self,
        script: &Function,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
    ) -> mlua::Result<Frame> {
        let args = keys.iter().chain(argv);
        let texts: Option<Vec<&str>> = args.clone().map(|a| std::str::from_utf8(a).ok()).collect();
        let (ok, result) = match texts {
            Some(texts) => {
                self.run
                    .call::<(bool, Value)>((script, keys.len(), Variadic::from_iter(texts)))?
            }
            None => {
                let strings = args.map(|arg| self.lua.create_string(arg));
                let strings = strings.collect::<mlua::Result<Variadic<_>>>()?;
                self.run
                    .call::<(bool, Value)>((script, keys.len(), strings))?
            }
        };
        if ok {
            return to_reply(&result);
        }
        Ok(failure(&result, sha))
    }
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

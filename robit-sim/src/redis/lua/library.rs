//! The Rust functions the script environment is built from (`prelude.lua` receives
//! them in one table): `redis.call` and `redis.pcall`, the `redis` functions that check
//! their arguments, `math.random` and `math.randomseed`, and the helpers the prelude
//! words errors with.
//!
//! Functions that can fail are Rust (C) functions, as in Redis, so that a script's
//! `return redis.call(...)` keeps the script's frame, and so its line, on the stack
//! when the call fails. A Rust function can only fail with an error Lua sees as an
//! opaque value, so each records what Redis would raise ([`Raised`]) for the prelude to
//! take back (`take_raised`).

use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mlua::{Lua, MultiValue, Table, Value};

use super::convert::{self, error_table, error_text, to_lua};
use super::rand48::Rand48;
use super::{HOOK_EVERY, INSTRUCTION_LIMIT, sha1_hex};
use crate::redis::commands::script_command;
use crate::redis::events::{LockEvent, Peer};
use crate::redis::exec::Exec;
use crate::redis::pubsub::Channels;
use crate::redis::resp::Frame;
use crate::redis::store::Dataset;

/// What a failed Rust function would raise in Redis: a failed command's error text,
/// or (`true`) Lua's message for a bad argument, positioned by the prelude.
pub(super) type Raised = Arc<Mutex<Option<(Vec<u8>, bool)>>>;

/// The server's state while a script runs: moved here from the server for the length
/// of the script, so that `redis.call` (a function of the interpreter, which cannot
/// borrow the server) reaches it.
#[derive(Debug)]
pub(super) struct Running {
    pub(super) data: Dataset,
    pub(super) channels: Channels,
    pub(super) events: Vec<LockEvent>,
    pub(super) now: Duration,
    pub(super) peer: Peer,
    pub(super) life: u64,
}

/// What the Rust functions share with the [`Vm`](super::Vm) that runs scripts.
#[derive(Debug, Clone, Default)]
pub(super) struct Shared {
    pub(super) raised: Raised,
    pub(super) running: Arc<Mutex<Option<Running>>>,
    /// How many times the instruction hook has seen the running script go on.
    pub(super) spent: Arc<AtomicU32>,
}

/// Records `error` for the prelude, and fails the Rust function that met it.
fn raise<T>(raised: &Raised, error: (Vec<u8>, bool)) -> mlua::Result<T> {
    *raised.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
    Err(mlua::Error::runtime("raised; see take_raised"))
}

/// One command of the running script: its reply, or its error as Redis's text.
fn command(running: &Mutex<Option<Running>>, args: &MultiValue) -> Result<Frame, Vec<u8>> {
    let args = convert::arguments(args).map_err(|message| error_text(message.as_bytes()))?;
    let mut running = running.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(running) = running.as_mut() else {
        return Err(b"ERR redis.call outside a running script".to_vec());
    };
    let mut exec = Exec {
        data: &mut running.data,
        scripts: None,
        channels: &mut running.channels,
        events: &mut running.events,
        waiters: None,
        now: running.now,
        peer: &running.peer,
        life: running.life,
    };
    match script_command(&mut exec, &args) {
        Frame::Error(message) => Err(error_text(&[b"-", &message[..]].concat())),
        reply => Ok(reply),
    }
}

/// The table of Rust functions `prelude.lua` is built with.
pub(super) fn functions(lua: &Lua, shared: &Shared) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    let (running, raised) = (Arc::clone(&shared.running), Arc::clone(&shared.raised));
    let call =
        lua.create_function(
            move |lua, args: MultiValue| match command(&running, &args) {
                Ok(reply) => to_lua(lua, reply),
                Err(text) => raise(&raised, (text, false)),
            },
        )?;
    table.raw_set("call", call)?;
    let running = Arc::clone(&shared.running);
    let pcall =
        lua.create_function(
            move |lua, args: MultiValue| match command(&running, &args) {
                Ok(reply) => to_lua(lua, reply),
                Err(text) => Ok(Value::Table(error_table(lua, &text)?)),
            },
        )?;
    table.raw_set("pcall", pcall)?;
    let error_text = lua.create_function(|lua, text: mlua::String| {
        lua.create_string(error_text(&text.as_bytes()))
    })?;
    table.raw_set("error_text", error_text)?;
    let raised = Arc::clone(&shared.raised);
    let take_raised = lua.create_function(move |lua, ()| {
        let error = raised.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some((text, lua_message)) = error else {
            return Ok((None, false));
        };
        Ok((Some(lua.create_string(text)?), lua_message))
    })?;
    table.raw_set("take_raised", take_raised)?;
    let spent = Arc::clone(&shared.spent);
    let stopped = lua.create_function(move |_, ()| {
        Ok(spent.load(std::sync::atomic::Ordering::Relaxed) >= INSTRUCTION_LIMIT / HOOK_EVERY)
    })?;
    table.raw_set("stopped", stopped)?;
    random(lua, &table, &shared.raised)?;
    checked(lua, &table, &shared.raised)?;
    Ok(table)
}

/// `math.random` and `math.randomseed`, on one generator.
fn random(lua: &Lua, table: &Table, raised: &Raised) -> mlua::Result<()> {
    let rand = Arc::new(Rand48::default());
    let (seeded, failed) = (Arc::clone(&rand), Arc::clone(raised));
    let random = lua.create_function(move |lua, args: MultiValue| {
        rand.random(lua, &args)
            .or_else(|message| raise(&failed, (message.into_bytes(), true)))
    })?;
    table.raw_set("random", random)?;
    let failed = Arc::clone(raised);
    let randomseed = lua.create_function(move |lua, args: MultiValue| {
        seeded
            .randomseed(lua, &args)
            .or_else(|message| raise(&failed, (message.into_bytes(), true)))
    })?;
    table.raw_set("randomseed", randomseed)
}

/// The `redis` functions that check their arguments, raising Redis's errors:
/// `sha1hex`, `log`, `setresp`, `acl_check_cmd`.
fn checked(lua: &Lua, table: &Table, raised: &Raised) -> mlua::Result<()> {
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
    table.raw_set("acl_check_cmd", acl)
}

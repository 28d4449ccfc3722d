//! The server-side scripts, and what they store: one round trip per operation.
//!
//! Here, the scripts (the `.lua` files, and [`sources`], their text as sent) and the
//! call of one: each is called with EVALSHA through a [`ScriptCall`], which writes the
//! hash, the keys and the arguments (a script's [`ScriptArgs`], in `args.rs`) straight
//! into the command's buffer. (`redis::ScriptInvocation` would first collect every key
//! and argument into a vector of its own, then copy them all into the command: an
//! allocation per key and argument on every call.) On NOSCRIPT — after SCRIPT FLUSH or
//! a restart — it sends SCRIPT LOAD and then the same EVALSHA once more, as
//! `ScriptInvocation` does, so the commands on the wire are the same as redis-rs's. The
//! `redis::Script`s here provide each script's hash and text. What the scripts answer
//! is parsed in `answers.rs`; the durations they take, in whole milliseconds, are
//! `millis.rs`'s; the keys they store in are named in `redis/keys.rs`.
//!
//! Every script includes `common.lua`: the lock key's format, the server's clock, and
//! the hand-off. Acquire and release run their uncontended path before it.

pub(super) mod answers;
pub(super) mod args;
#[cfg(test)]
mod tests;
pub(super) mod whole_millis;

use std::sync::OnceLock;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{
    Cmd, ErrorKind, FromRedisValue, RedisResult, Script, ServerErrorKind, ToRedisArgs, Value,
};

use self::args::{ScriptArgs, required};
use self::whole_millis::millis_ceil;

#[doc(hidden)]
pub mod sources;

/// A script: its name, its text, and its hash (a `redis::Script`, made on first use);
/// and for acquire, renew and release, the script that runs many of their calls in one.
pub(super) struct Lua {
    name: &'static str,
    source: &'static str,
    script: OnceLock<Script>,
    many: Option<&'static Lua>,
}

impl Lua {
    const fn new(name: &'static str, source: &'static str, many: Option<&'static Lua>) -> Self {
        Self {
            name,
            source,
            script: OnceLock::new(),
            many,
        }
    }

    fn script(&self) -> &Script {
        self.script.get_or_init(|| Script::new(self.source))
    }

    /// The script's text, as sent.
    #[cfg(test)]
    pub(super) fn source(&self) -> &'static str {
        self.source
    }
}

pub(super) static ACQUIRE: Lua = Lua::new("acquire", sources::ACQUIRE, Some(&ACQUIRE_MANY));
pub(super) static RENEW: Lua = Lua::new("renew", sources::RENEW, Some(&RENEW_MANY));
pub(super) static RELEASE: Lua = Lua::new("release", sources::RELEASE, Some(&RELEASE_MANY));
pub(super) static WITHDRAW: Lua = Lua::new("withdraw", sources::WITHDRAW, None);
pub(super) static INSPECT: Lua = Lua::new("inspect", sources::INSPECT, None);
pub(super) static RAISE: Lua = Lua::new("raise", sources::RAISE, None);
pub(super) static CREATE: Lua = Lua::new("create", sources::CREATE, None);
static ACQUIRE_MANY: Lua = Lua::new("acquire_many", sources::ACQUIRE_MANY, None);
static RENEW_MANY: Lua = Lua::new("renew_many", sources::RENEW_MANY, None);
static RELEASE_MANY: Lua = Lua::new("release_many", sources::RELEASE_MANY, None);

/// Adds `SCRIPT LOAD` of every script to `pipe`: a new connection loads them all in one
/// round trip, so that no call on it meets NOSCRIPT unless the server loses its scripts
/// (`SCRIPT FLUSH`). All but create's: it runs in cluster mode only, where scripts are
/// sent in full to a node that lacks them; and raise's, which runs only in a quorum,
/// and then rarely (it is loaded on first use).
pub(super) fn load_all(pipe: &mut redis::Pipeline) {
    for source in [
        sources::ACQUIRE,
        sources::RENEW,
        sources::RELEASE,
        sources::WITHDRAW,
        sources::INSPECT,
        sources::ACQUIRE_MANY,
        sources::RENEW_MANY,
        sources::RELEASE_MANY,
    ] {
        pipe.cmd("SCRIPT").arg("LOAD").arg(source);
    }
}

/// One call of a script, `EVALSHA <hash> <number of keys> <keys…> <arguments…>`, built
/// directly in the command's buffer from the script's [`ScriptArgs`].
pub(super) struct ScriptCall {
    script: &'static Lua,
    command: Cmd,
    /// How many keys the call has.
    keys: usize,
    /// Keys still to be written, as the arguments' type declares them.
    keys_left: usize,
    /// Arguments written so far.
    args: usize,
    /// Sent on its own even when others of its script are in flight.
    alone: bool,
}

impl ScriptCall {
    /// The call of `A`'s script with `args`. The command's buffer is sized for about
    /// `bytes` bytes of keys and arguments: a hint, not a limit.
    ///
    /// Checks, in debug builds, that `args` wrote as many keys as `A` declares, and as
    /// many arguments as it declares less none, some or all of its optional ones.
    pub(super) fn new<A: ScriptArgs>(args: &A, bytes: usize) -> Self {
        let script = A::SCRIPT;
        let hash = script.script().get_hash();
        let keys = A::KEYS.len();
        // "EVALSHA", the hash, the number of keys.
        let mut command = Cmd::with_capacity(3 + keys + A::ARGV.len(), 7 + hash.len() + 4 + bytes);
        command.arg("EVALSHA").arg(hash).arg(keys);
        let mut call = Self {
            script,
            command,
            keys,
            keys_left: keys,
            args: 0,
            alone: false,
        };
        args.write(&mut call);
        debug_assert_eq!(call.keys_left, 0, "fewer keys than {:?}", A::KEYS);
        debug_assert!(
            (required(A::ARGV)..=A::ARGV.len()).contains(&call.args),
            "{} arguments for {:?}",
            call.args,
            A::ARGV
        );
        call
    }

    /// The bytes of the call's keys and arguments, as [`new`](Self::new)'s `bytes` counts
    /// them.
    pub(super) fn bytes(&self) -> usize {
        self.keys_and_args().map(<[u8]>::len).sum()
    }

    /// How many arguments (not keys) the call has.
    #[cfg(test)]
    pub(super) fn args(&self) -> usize {
        self.args
    }

    /// Every word of the command, as bytes: `EVALSHA`, the hash, the number of keys,
    /// the keys and the arguments.
    #[cfg(test)]
    pub(super) fn words(&self) -> Vec<Vec<u8>> {
        words(&self.command)
    }

    /// The call, to be sent on its own even when others of its script are in flight: a
    /// release that wakes a waiter of this process as soon as it is sent.
    pub(super) fn alone(mut self) -> Self {
        self.alone = true;
        self
    }

    /// The script that runs many calls of this one's in one, if the call may go out
    /// with others.
    pub(super) fn many(&self) -> Option<&'static Lua> {
        self.script.many.filter(|_| !self.alone)
    }

    /// The script's name.
    pub(super) fn script_name(&self) -> &'static str {
        self.script.name
    }

    /// The call's first key.
    pub(super) fn first_key(&self) -> &[u8] {
        self.keys_and_args().next().unwrap_or_default()
    }

    /// The call's keys, then its arguments.
    fn keys_and_args(&self) -> impl Iterator<Item = &[u8]> {
        self.command.args_iter().skip(3).map(|arg| match arg {
            redis::Arg::Simple(bytes) => bytes,
            _ => &[][..],
        })
    }

    /// One call of `many` that runs every one of `calls` (calls of one script, whose
    /// batch script `many` is): their keys, then each one's number of arguments and its
    /// arguments (scripts/many.lua).
    pub(super) fn batch(many: &'static Lua, calls: &[&ScriptCall]) -> Self {
        let keys: usize = calls.iter().map(|call| call.keys).sum();
        let bytes = batch_room(calls);
        let hash = many.script().get_hash();
        let mut command =
            Cmd::with_capacity(3 + keys + calls.len() * 13, 7 + hash.len() + 4 + bytes);
        command.arg("EVALSHA").arg(hash).arg(keys);
        for call in calls {
            for key in call.keys_and_args().take(call.keys) {
                command.arg(key);
            }
        }
        let mut args = 0;
        for call in calls {
            // The count each item's arguments are read by (many.lua): the words written,
            // one an argument as `arg` writes them.
            debug_assert_eq!(call.keys_and_args().skip(call.keys).count(), call.args);
            command.arg(call.args);
            for arg in call.keys_and_args().skip(call.keys) {
                command.arg(arg);
            }
            args += call.args + 1;
        }
        Self {
            script: many,
            command,
            keys,
            keys_left: 0,
            args,
            alone: true,
        }
    }

    /// Appends a key: `KEYS[i]` in the script. All keys come before any argument.
    pub(super) fn key(&mut self, key: impl ToRedisArgs) -> &mut Self {
        debug_assert!(self.keys_left > 0, "more keys than declared");
        self.keys_left -= 1;
        self.command.arg(key);
        self
    }

    /// Appends an argument: `ARGV[i]` in the script.
    pub(super) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        debug_assert_eq!(self.keys_left, 0, "an argument before the last key");
        self.args += 1;
        self.command.arg(arg);
        self
    }

    /// Sends the call; on NOSCRIPT, loads the script (SCRIPT LOAD) and sends the same
    /// call once more, and only once, as `redis::ScriptInvocation::invoke_async` does. A
    /// failed load is the call's error.
    ///
    /// In cluster mode (`in_full`) the call is sent once more with the script's text
    /// (`EVAL`) instead: it goes to the node that lacked the script, which keeps it, where
    /// `SCRIPT LOAD` would go to every master, and fail while any one is down.
    pub(super) async fn invoke<T: FromRedisValue>(
        &self,
        connection: &mut impl ConnectionLike,
        in_full: bool,
    ) -> RedisResult<T> {
        let answer = match query(&self.command, connection).await {
            Err(err) if err.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                if in_full {
                    query(&self.in_full(), connection).await
                } else {
                    self.script.script().load_async(connection).await?;
                    query(&self.command, connection).await
                }
            }
            answer => answer,
        };
        Ok(T::from_redis_value(answer?)?)
    }

    /// The call as `EVAL <script text> …`, with the same keys and arguments.
    fn in_full(&self) -> Cmd {
        let mut command = Cmd::new();
        command.arg("EVAL").arg(self.script.source);
        for arg in self.command.args_iter().skip(2) {
            if let redis::Arg::Simple(bytes) = arg {
                command.arg(bytes);
            }
        }
        command
    }
}

impl ScriptCall {
    /// Sends the call and `WAIT <replicas> <timeout ms>` in one pipeline (one round
    /// trip); on NOSCRIPT, loads the script and sends both once more, as
    /// [`invoke`](Self::invoke) does. Answers the script's answer and, on its own, the
    /// number of replicas that acknowledged it or why `WAIT` failed: a grant the script
    /// made is never lost to a failure of `WAIT`.
    pub(super) async fn invoke_acked<T: FromRedisValue>(
        &self,
        connection: &mut impl ConnectionLike,
        in_full: bool,
        (replicas, timeout): (u32, Duration),
    ) -> RedisResult<(T, RedisResult<u32>)> {
        let acked = |command: Cmd| {
            let mut pipe = redis::pipe();
            pipe.add_command(command)
                .cmd("WAIT")
                .arg(replicas)
                .arg(millis_ceil(timeout));
            pipe
        };
        let mut answers = replies(&mut acked(self.command.clone()), connection).await?;
        let missing = |answers: &[RedisResult<Value>]| {
            matches!(answers.first(), Some(Err(err))
                if err.kind() == ErrorKind::Server(ServerErrorKind::NoScript))
        };
        if missing(&answers) {
            let command = if in_full {
                self.in_full()
            } else {
                self.script.script().load_async(connection).await?;
                self.command.clone()
            };
            answers = replies(&mut acked(command), connection).await?;
        }
        let mut answers = answers.into_iter();
        let (Some(answer), Some(acked)) = (answers.next(), answers.next()) else {
            return Err((
                ErrorKind::Parse,
                "a pipeline of two commands answered fewer",
            )
                .into());
        };
        let answer = T::from_redis_value(answer?)?;
        let acked = acked.and_then(|acked| Ok(u32::from_redis_value(acked)?));
        Ok((answer, acked))
    }
}

/// The bytes a batch of `calls` is made with room for: their keys and arguments, and
/// each one's count. A hint: a command that outgrows it grows.
fn batch_room(calls: &[&ScriptCall]) -> usize {
    calls.iter().map(|call| call.bytes() + 4).sum()
}

/// Sends `pipe` and answers each command's reply on its own: a server's error stays that
/// command's, with its code and words (as a pipeline's own error, it would lose them for
/// codes redis-rs does not know, NOAUTH and WRONGTYPE among them).
pub(super) async fn replies(
    pipe: &mut redis::Pipeline,
    connection: &mut impl ConnectionLike,
) -> RedisResult<Vec<RedisResult<Value>>> {
    pipe.ignore_errors();
    let values: Vec<Value> = pipe.query_async(connection).await?;
    Ok(values.into_iter().map(top_error).collect())
}

/// Sends `command` and answers its reply as it came: an error only if the reply is one,
/// not if an item of it is (a batch's answer holds each item's error in its place,
/// where `Cmd::query_async` would make any of them the whole reply's).
async fn query(command: &Cmd, connection: &mut impl ConnectionLike) -> RedisResult<Value> {
    top_error(connection.req_packed_command(command).await?)
}

/// `value`, or the error it is, if it is one (not looking inside it).
fn top_error(value: Value) -> RedisResult<Value> {
    match value {
        Value::ServerError(err) => Err(err.into()),
        value => Ok(value),
    }
}

/// Each word of `command`, as bytes.
#[cfg(test)]
fn words(command: &Cmd) -> Vec<Vec<u8>> {
    command
        .args_iter()
        .map(|arg| match arg {
            redis::Arg::Simple(bytes) => bytes.to_vec(),
            _ => Vec::new(),
        })
        .collect()
}

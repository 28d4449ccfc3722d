//! The command table and the commands on keys and strings, with Redis 7's replies.
//!
//! Every command is checked the way Redis checks it before running it — unknown name,
//! unknown subcommand, wrong number of arguments — with the same error text, and then
//! runs against the dataset at the one instant `now` given for it.
//!
//! The other command families are in the modules below: `lists`, and `eval` for the
//! scripts, which run in the server's Lua (`crate::redis::lua`). A script's
//! `redis.call` comes back here, to [`script_command`].

mod eval;
mod lists;

use std::time::Duration;

use super::exec::{EPOCH, Exec, SYNTAX, integer, wrong_arity};
use super::grants;
use super::resp::Frame;

/// The server version HELLO reports: the Redis release whose behaviour this follows
/// (the first with CLIENT SETINFO).
pub(crate) const VERSION: &str = "7.2.0";
/// [`VERSION`] as a number, as scripts read it (`redis.REDIS_VERSION_NUM`).
pub(crate) const VERSION_NUM: u32 = 0x07_02_00;

/// Commands a script may not call (Redis's `noscript` ones, among those known here).
const NOT_IN_SCRIPTS: &[&str] = &[
    "auth",
    "client",
    "eval",
    "evalsha",
    "hello",
    "psubscribe",
    "punsubscribe",
    "quit",
    "reset",
    "script",
    "subscribe",
    "unsubscribe",
];

/// Commands this server knows, with Redis's arity: positive is exact, negative a minimum
/// (both count the command's name).
const COMMANDS: &[(&str, i64)] = &[
    ("auth", -2),
    ("client", -2),
    ("dbsize", 1),
    ("del", -2),
    ("echo", 2),
    ("eval", -3),
    ("evalsha", -3),
    ("exists", -2),
    ("flushall", -1),
    ("get", 2),
    ("getdel", 2),
    ("hello", -1),
    ("incr", 2),
    ("info", -1),
    ("lindex", 3),
    ("llen", 2),
    ("lpop", -2),
    ("lpos", -3),
    ("lpush", -3),
    ("lrange", 4),
    ("lrem", 4),
    ("pexpire", -3),
    ("pexpireat", -3),
    ("ping", -1),
    ("psubscribe", -2),
    ("pttl", 2),
    ("publish", 3),
    ("punsubscribe", -1),
    ("quit", -1),
    ("reset", 1),
    ("rpush", -3),
    ("script", -2),
    ("select", 2),
    ("set", -3),
    ("subscribe", -2),
    ("time", 1),
    ("type", 2),
    ("unsubscribe", -1),
];

/// Subcommands of the container commands, with their arity.
const SUBCOMMANDS: &[(&str, &str, i64)] = &[
    ("client", "getname", 2),
    ("client", "id", 2),
    ("client", "setinfo", 4),
    ("client", "setname", 3),
    ("script", "exists", -3),
    ("script", "flush", -2),
    ("script", "kill", 2),
    ("script", "load", 3),
];

/// Why a command was refused before it ran.
enum Refused {
    Empty,
    UnknownCommand,
    UnknownSubcommand,
    /// Wrong number of arguments for the command (`name|sub` for a subcommand).
    Arity(String),
}

/// The lower-case name of the known command (and subcommand) `args` names, with an
/// acceptable number of arguments.
fn lookup(args: &[Vec<u8>]) -> Result<String, Refused> {
    let first = args.first().ok_or(Refused::Empty)?;
    let name = String::from_utf8_lossy(first).to_ascii_lowercase();
    let &(_, arity) = COMMANDS
        .iter()
        .find(|(known, _)| *known == name)
        .ok_or(Refused::UnknownCommand)?;
    let subcommands: Vec<_> = SUBCOMMANDS.iter().filter(|(of, ..)| *of == name).collect();
    let (full, arity) = match (subcommands.is_empty(), args.get(1)) {
        (false, Some(sub)) => {
            let sub = String::from_utf8_lossy(sub).to_ascii_lowercase();
            let &&(_, _, arity) = subcommands
                .iter()
                .find(|(_, known, _)| *known == sub)
                .ok_or(Refused::UnknownSubcommand)?;
            (format!("{name}|{sub}"), arity)
        }
        _ => (name.clone(), arity),
    };
    let argc = i64::try_from(args.len()).unwrap_or(i64::MAX);
    if (arity > 0 && argc != arity) || argc < arity.abs() {
        return Err(Refused::Arity(full));
    }
    Ok(name)
}

/// Checks that `args` names a known command (and subcommand) with an acceptable number
/// of arguments; answers its lower-case name, or the error Redis would reply.
pub(crate) fn check(args: &[Vec<u8>]) -> Result<String, Frame> {
    lookup(args).map_err(|refused| match refused {
        Refused::Empty => Frame::error("ERR empty command"),
        Refused::UnknownCommand => unknown_command(args),
        Refused::UnknownSubcommand => unknown_subcommand(args),
        Refused::Arity(full) => wrong_arity(&full),
    })
}

/// Runs a command a script called, with the checks and error texts Redis has for
/// those: an unknown command, a wrong number of arguments, a command not allowed in
/// scripts.
pub(crate) fn script_command(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Frame {
    let name = match lookup(args) {
        Ok(name) => name,
        Err(Refused::Arity(_)) => {
            return Frame::error("ERR Wrong number of args calling Redis command from script");
        }
        Err(_) => return Frame::error("ERR Unknown Redis command called from script"),
    };
    if NOT_IN_SCRIPTS.contains(&name.as_str()) {
        return Frame::error("ERR This Redis command is not allowed from script");
    }
    if name == "info" {
        return super::state::info(exec.life, &args[1..]);
    }
    dispatch(exec, &name, args)
}

fn unknown_command(args: &[Vec<u8>]) -> Frame {
    let mut message = b"ERR unknown command '".to_vec();
    message.extend(args[0].iter().take(128));
    message.extend_from_slice(b"', with args beginning with: ");
    let mut listed = 0;
    for arg in &args[1..] {
        if listed >= 128 {
            break;
        }
        let shown = arg.len().min(128 - listed);
        message.push(b'\'');
        message.extend_from_slice(&arg[..shown]);
        message.extend_from_slice(b"' ");
        listed += shown + 3;
    }
    Frame::Error(message)
}

fn unknown_subcommand(args: &[Vec<u8>]) -> Frame {
    let mut message = b"ERR unknown subcommand '".to_vec();
    message.extend(args[1].iter().take(128));
    message.extend_from_slice(b"'. Try ");
    message.extend(args[0].to_ascii_uppercase());
    message.extend_from_slice(b" HELP.");
    Frame::Error(message)
}

fn count(n: usize) -> Frame {
    Frame::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Runs a command that [`check`] accepted as `name`, and reports what it did to locks
/// (see `crate::redis::grants`): a client's command, or a script as a whole. Connection commands (HELLO, SUBSCRIBE, …) are the
/// session's; here they answer that they need a connection.
pub(crate) fn dispatch(exec: &mut Exec<'_>, name: &str, args: &[Vec<u8>]) -> Frame {
    // A script's own commands are not looked at one by one: the script is, as a whole.
    let sent_by_client = exec.scripts.is_some();
    let watched = if sent_by_client {
        grants::watch(exec, name, args)
    } else {
        Vec::new()
    };
    let reply = run(exec, name, args);
    grants::report(exec, watched);
    grants::quarantine(exec, name, args);
    reply
}

fn run(exec: &mut Exec<'_>, name: &str, args: &[Vec<u8>]) -> Frame {
    let reply = match name {
        "ping" => ping(args),
        "echo" => Ok(Frame::bulk(&args[1])),
        "time" => Ok(time(exec.now)),
        "get" => exec
            .data
            .get(&args[1], exec.ms())
            .map(|value| value.map_or(Frame::NullBulk, Frame::Bulk))
            .map_err(Frame::error),
        "set" => set(exec, args),
        "del" => {
            let now = exec.ms();
            Ok(count(
                args[1..]
                    .iter()
                    .filter(|key| exec.data.del(key, now))
                    .count(),
            ))
        }
        "exists" => {
            let now = exec.ms();
            Ok(count(
                args[1..]
                    .iter()
                    .filter(|key| exec.data.exists(key, now))
                    .count(),
            ))
        }
        "type" => Ok(Frame::simple(exec.data.type_name(&args[1], exec.ms()))),
        "pttl" => Ok(Frame::Integer(exec.data.pttl(&args[1], exec.ms()))),
        "pexpire" => pexpire(exec, args, false),
        "pexpireat" => pexpire(exec, args, true),
        "getdel" => getdel(exec, args),
        "incr" => exec
            .data
            .incr(&args[1], exec.ms())
            .map(Frame::Integer)
            .map_err(Frame::error),
        "dbsize" => Ok(count(exec.data.len(exec.ms()))),
        "flushall" => flushall(exec, args),
        "publish" => Ok(Frame::Integer(exec.channels.publish(&args[1], &args[2]))),
        "eval" => Ok(eval::eval(exec, args, false)),
        "evalsha" => Ok(eval::eval(exec, args, true)),
        "script" => Ok(eval::script(exec, args)),
        _ => lists::dispatch(exec, name, args).unwrap_or_else(|| {
            Ok(Frame::error(format!(
                "ERR the simulated Redis answers '{name}' only on a connection to SimRedis"
            )))
        }),
    };
    reply.unwrap_or_else(|error| error)
}

fn ping(args: &[Vec<u8>]) -> Result<Frame, Frame> {
    match args {
        [_] => Ok(Frame::simple("PONG")),
        [_, message] => Ok(Frame::bulk(message)),
        _ => Err(wrong_arity("ping")),
    }
}

/// TIME: `[seconds, microseconds]` of `EPOCH + now`.
fn time(now: Duration) -> Frame {
    let clock = EPOCH + now;
    Frame::Array(vec![
        Frame::bulk(clock.as_secs().to_string()),
        Frame::bulk(clock.subsec_micros().to_string()),
    ])
}

fn invalid_expire(command: &str) -> Frame {
    Frame::error(format!("ERR invalid expire time in '{command}' command"))
}

/// An expiry option of SET: its argument, milliseconds per unit, and whether it is a
/// Unix time (EXAT, PXAT) rather than a time to live (EX, PX).
type ExpireOption<'a> = (&'a [u8], i64, bool);

/// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT unix-s|PXAT unix-ms|KEEPTTL], parsed and
/// answered as Redis 7 does: a bad expiry first, then GET's type check, then NX/XX.
fn set(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Result<Frame, Frame> {
    let (mut nx, mut xx, mut get, mut keep_ttl) = (false, false, false, false);
    let mut expire: Option<ExpireOption<'_>> = None;
    let mut i = 3;
    while let Some(option) = args.get(i) {
        let next = args.get(i + 1);
        let lower = option.to_ascii_lowercase();
        let timed = match lower.as_slice() {
            b"ex" => Some((1000, false)),
            b"px" => Some((1, false)),
            b"exat" => Some((1000, true)),
            b"pxat" => Some((1, true)),
            _ => None,
        };
        match (lower.as_slice(), timed) {
            (b"nx", _) if !xx => nx = true,
            (b"xx", _) if !nx => xx = true,
            (b"get", _) => get = true,
            (b"keepttl", _) if expire.is_none() => keep_ttl = true,
            (_, Some((unit, absolute))) if !keep_ttl && next.is_some() => {
                if expire.is_some_and(|(_, u, a)| (u, a) != (unit, absolute)) {
                    return Err(Frame::error(SYNTAX));
                }
                expire = next.map(|arg| (arg.as_slice(), unit, absolute));
                i += 1;
            }
            _ => return Err(Frame::error(SYNTAX)),
        }
        i += 1;
    }
    let now = exec.ms();
    let expires_at = expire.map(|option| set_expiry(option, now)).transpose()?;
    let old = if get {
        Some(exec.data.get(&args[1], now).map_err(Frame::error)?)
    } else {
        None
    };
    let found = exec.data.exists(&args[1], now);
    let answer = |old: Option<Option<Vec<u8>>>, done: Frame| match old {
        Some(value) => value.map_or(Frame::NullBulk, Frame::Bulk),
        None => done,
    };
    if (nx && found) || (xx && !found) {
        return Ok(answer(old, Frame::NullBulk));
    }
    // A Unix time already past is kept as it is: the key is gone from the next
    // millisecond, as in Redis 7.0.
    exec.data
        .set(&args[1], args[2].clone(), expires_at, keep_ttl, now);
    Ok(answer(old, Frame::ok()))
}

/// When a SET expiry option makes the key expire (Unix ms), or Redis's error for it.
fn set_expiry((arg, unit, absolute): ExpireOption<'_>, now: i64) -> Result<i64, Frame> {
    let amount = integer(arg)?;
    if amount <= 0 || amount > i64::MAX / unit {
        return Err(invalid_expire("set"));
    }
    let when = if absolute {
        Some(amount * unit)
    } else {
        (amount * unit).checked_add(now)
    };
    match when {
        Some(when) if when > 0 => Ok(when),
        _ => Err(invalid_expire("set")),
    }
}

/// GETDEL key: the string, deleted; nil without a key.
fn getdel(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Result<Frame, Frame> {
    let now = exec.ms();
    let value = exec.data.get(&args[1], now).map_err(Frame::error)?;
    if value.is_some() {
        exec.data.del(&args[1], now);
    }
    Ok(value.map_or(Frame::NullBulk, Frame::Bulk))
}

/// PEXPIRE key milliseconds [NX|XX|GT|LT], and PEXPIREAT key unix-ms [NX|XX|GT|LT]
/// (`absolute`).
fn pexpire(exec: &mut Exec<'_>, args: &[Vec<u8>], absolute: bool) -> Result<Frame, Frame> {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for option in &args[3..] {
        match option.to_ascii_lowercase().as_slice() {
            b"nx" => nx = true,
            b"xx" => xx = true,
            b"gt" => gt = true,
            b"lt" => lt = true,
            _ => {
                let mut message = b"ERR Unsupported option ".to_vec();
                message.extend_from_slice(option);
                return Err(Frame::Error(message));
            }
        }
    }
    if nx && (xx || gt || lt) {
        return Err(Frame::error(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(Frame::error(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let now = exec.ms();
    let command = if absolute { "pexpireat" } else { "pexpire" };
    let base = if absolute { 0 } else { now };
    let when = integer(&args[2])?
        .checked_add(base)
        .ok_or_else(|| invalid_expire(command))?;
    let Some(current) = exec.data.expiry(&args[1], now) else {
        return Ok(Frame::Integer(0));
    };
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|current| when <= current))
        || (lt && current.is_some_and(|current| when >= current));
    if refused {
        return Ok(Frame::Integer(0));
    }
    exec.data.expire_at(&args[1], when, now);
    Ok(Frame::Integer(1))
}

fn flushall(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Result<Frame, Frame> {
    match args {
        [_] => {}
        [_, mode] if mode.eq_ignore_ascii_case(b"sync") || mode.eq_ignore_ascii_case(b"async") => {}
        _ => return Err(Frame::error(SYNTAX)),
    }
    exec.data.clear();
    Ok(Frame::ok())
}

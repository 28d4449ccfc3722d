//! Running a command, and the commands on keys and strings, with Redis 7's replies.
//!
//! Every command is checked the way Redis checks it before running it (`table`: its
//! name, subcommand and number of arguments, into a [`Command`]), and then runs against
//! the dataset at the one instant `now` given for it.
//!
//! The other command families are in the modules below: `lists`, and `eval` for the
//! scripts, which run in the server's Lua (`crate::redis::lua`). A script's
//! `redis.call` comes back here, to [`script_command`].

mod eval;
mod lists;
mod table;

use std::time::Duration;

pub(crate) use self::table::{Command, check};
use self::table::{Refused, lookup};
use super::exec::{EPOCH, Exec, SYNTAX, integer, wrong_arity};
use super::lock_keys;
use super::resp::Frame;

/// The server version HELLO reports: the Redis release whose behaviour this follows
/// (the first with CLIENT SETINFO).
pub(crate) const VERSION: &str = "7.2.0";
/// [`VERSION`] as a number, as scripts read it (`redis.REDIS_VERSION_NUM`).
pub(crate) const VERSION_NUM: u32 = 0x07_02_00;

/// Runs a command a script called, with the checks and error texts Redis has for
/// those: an unknown command, a wrong number of arguments, a command not allowed in
/// scripts.
pub(crate) fn script_command(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Frame {
    let command = match lookup(args) {
        Ok(command) => command,
        Err(Refused::Arity(_)) => {
            return Frame::error("ERR Wrong number of args calling Redis command from script");
        }
        Err(_) => return Frame::error("ERR Unknown Redis command called from script"),
    };
    if !command.allowed_in_scripts() {
        return Frame::error("ERR This Redis command is not allowed from script");
    }
    if command == Command::Info {
        return super::state::info(exec.life, &args[1..]);
    }
    dispatch(exec, command, args)
}

fn count(n: usize) -> Frame {
    Frame::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Runs a command that [`check`] accepted as `command`, and reports what it did to locks
/// (see `crate::redis::lock_keys`): a client's command, or a script as a whole. Connection commands (HELLO, SUBSCRIBE, …) are the
/// session's; here they answer that they need a connection.
pub(crate) fn dispatch(exec: &mut Exec<'_>, command: Command, args: &[Vec<u8>]) -> Frame {
    // A script's own commands are not looked at one by one: the script is, as a whole.
    let sent_by_client = exec.scripts.is_some();
    let watched = if sent_by_client {
        lock_keys::watch(exec, command, args)
    } else {
        lock_keys::Watched::default()
    };
    let reply = run(exec, command, args);
    lock_keys::report(exec, watched);
    lock_keys::quarantine(exec, command, args);
    reply
}

fn run(exec: &mut Exec<'_>, command: Command, args: &[Vec<u8>]) -> Frame {
    let reply = match command {
        Command::Ping => ping(args),
        Command::Echo => Ok(Frame::bulk(&args[1])),
        Command::Time => Ok(time(exec.now)),
        Command::Get => exec
            .data
            .get(&args[1], exec.ms())
            .map(|value| value.map_or(Frame::NullBulk, Frame::Bulk))
            .map_err(Frame::error),
        Command::Set => set(exec, args),
        Command::Del => {
            let now = exec.ms();
            Ok(count(
                args[1..]
                    .iter()
                    .filter(|key| exec.data.del(key, now))
                    .count(),
            ))
        }
        Command::Exists => {
            let now = exec.ms();
            Ok(count(
                args[1..]
                    .iter()
                    .filter(|key| exec.data.exists(key, now))
                    .count(),
            ))
        }
        Command::Type => Ok(Frame::simple(exec.data.type_name(&args[1], exec.ms()))),
        Command::Pttl => Ok(Frame::Integer(exec.data.pttl(&args[1], exec.ms()))),
        Command::Pexpire => pexpire(exec, args, false),
        Command::Pexpireat => pexpire(exec, args, true),
        Command::Getdel => getdel(exec, args),
        Command::Incr => exec
            .data
            .incr(&args[1], exec.ms())
            .map(Frame::Integer)
            .map_err(Frame::error),
        Command::Dbsize => Ok(count(exec.data.len(exec.ms()))),
        Command::Flushall => flushall(exec, args),
        Command::Publish => Ok(Frame::Integer(exec.channels.publish(&args[1], &args[2]))),
        Command::Eval => Ok(eval::eval(exec, args, false)),
        Command::Evalsha => Ok(eval::eval(exec, args, true)),
        Command::Script => Ok(eval::script(exec, args)),
        _ => lists::dispatch(exec, command, args).unwrap_or_else(|| {
            Ok(Frame::error(format!(
                "ERR the simulated Redis answers '{}' only on a connection to SimRedis",
                command.name()
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

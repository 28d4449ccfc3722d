//! The commands that load and call scripts: EVAL, EVALSHA and SCRIPT LOAD / EXISTS /
//! FLUSH / KILL. Only robit's own scripts ([`RobitScript`]) run, natively (see
//! `native`); anything else is refused with an error that says so.

use super::native;
use crate::redis::exec::{Exec, integer};
use crate::redis::resp::Frame;
use crate::redis::scripts::RobitScript;

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

fn not_robits() -> Frame {
    Frame::error(
        "ERR the simulated Redis runs no Lua: it runs robit's own scripts natively, \
         and this is not one of them",
    )
}

/// EVAL script numkeys key… arg… and EVALSHA sha1 numkeys key… arg….
pub(crate) fn eval(exec: &mut Exec<'_>, args: &[Vec<u8>], by_sha: bool) -> Frame {
    if by_sha && args[1].len() != 40 {
        return Frame::error(NOSCRIPT);
    }
    let numkeys = match integer(&args[2]) {
        Ok(n) => n,
        Err(error) => return error,
    };
    let available = args.len() - 3;
    let numkeys = match usize::try_from(numkeys) {
        Err(_) => return Frame::error("ERR Number of keys can't be negative"),
        Ok(n) if n > available => {
            return Frame::error("ERR Number of keys can't be greater than number of args");
        }
        Ok(n) => n,
    };
    let kind = if by_sha {
        match exec.scripts.find(&args[1]) {
            Some(kind) => kind,
            None => return Frame::error(NOSCRIPT),
        }
    } else {
        match RobitScript::of_text(&args[1]) {
            Some(kind) => {
                exec.scripts.load(kind);
                kind
            }
            None => return not_robits(),
        }
    };
    let (keys, argv) = args[3..].split_at(numkeys);
    native::run(exec, kind, keys, argv)
}

/// SCRIPT LOAD / EXISTS / FLUSH / KILL (the subcommand and its arity are checked).
pub(crate) fn script(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Frame {
    match args[1].to_ascii_lowercase().as_slice() {
        b"load" => match RobitScript::of_text(&args[2]) {
            Some(kind) => Frame::bulk(exec.scripts.load(kind)),
            None => not_robits(),
        },
        b"exists" => Frame::Array(
            args[2..]
                .iter()
                .map(|sha| Frame::Integer(i64::from(exec.scripts.find(sha).is_some())))
                .collect(),
        ),
        b"flush" => match &args[2..] {
            [] => {
                exec.scripts.clear();
                Frame::ok()
            }
            [mode] if mode.eq_ignore_ascii_case(b"sync") || mode.eq_ignore_ascii_case(b"async") => {
                exec.scripts.clear();
                Frame::ok()
            }
            _ => Frame::error("ERR SCRIPT FLUSH only support SYNC|ASYNC option"),
        },
        b"kill" => Frame::error("NOTBUSY No scripts in execution right now."),
        _ => Frame::error("ERR unknown subcommand"),
    }
}

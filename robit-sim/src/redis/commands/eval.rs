//! The commands that load and call scripts: EVAL, EVALSHA and SCRIPT LOAD / EXISTS /
//! FLUSH / KILL. Scripts run in the server's Lua (`crate::redis::lua`).

use crate::redis::exec::{Exec, integer};
use crate::redis::resp::Frame;

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// The reply to a script command where there are no scripts (inside a script, which
/// the command table does not allow anyway).
fn no_scripts() -> Frame {
    Frame::error("ERR This Redis command is not allowed from script")
}

/// EVAL script numkeys key… arg… and EVALSHA sha1 numkeys key… arg….
pub(crate) fn eval(exec: &mut Exec<'_>, args: &[Vec<u8>], by_sha: bool) -> Frame {
    // Redis answers a SHA1 of the wrong length before it looks at anything else.
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
    let Some(scripts) = exec.scripts.as_deref_mut() else {
        return no_scripts();
    };
    let found = if by_sha {
        scripts.find(&args[1]).ok_or_else(|| Frame::error(NOSCRIPT))
    } else {
        scripts.load(&args[1])
    };
    let (vm, script, sha) = match found {
        Ok(found) => found,
        Err(error) => return error,
    };
    let (keys, argv) = args[3..].split_at(numkeys);
    vm.run(exec, &script, &sha, keys, argv)
}

/// SCRIPT LOAD / EXISTS / FLUSH / KILL (the subcommand and its arity are checked).
pub(crate) fn script(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Frame {
    let Some(scripts) = exec.scripts.as_deref_mut() else {
        return no_scripts();
    };
    match args[1].to_ascii_lowercase().as_slice() {
        b"load" => match scripts.load(&args[2]) {
            Ok((_, _, sha)) => Frame::bulk(sha),
            Err(error) => error,
        },
        b"exists" => Frame::Array(
            args[2..]
                .iter()
                .map(|sha| Frame::Integer(i64::from(scripts.find(sha).is_some())))
                .collect(),
        ),
        b"flush" => match &args[2..] {
            [] => {
                scripts.clear();
                Frame::ok()
            }
            [mode] if mode.eq_ignore_ascii_case(b"sync") || mode.eq_ignore_ascii_case(b"async") => {
                scripts.clear();
                Frame::ok()
            }
            _ => Frame::error("ERR SCRIPT FLUSH only support SYNC|ASYNC option"),
        },
        b"kill" => Frame::error("NOTBUSY No scripts in execution right now."),
        _ => Frame::error("ERR unknown subcommand"),
    }
}

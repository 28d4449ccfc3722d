//! Which scripts the simulated Redis knows, and the commands that load and call them:
//! EVAL, EVALSHA and SCRIPT LOAD / EXISTS / FLUSH / KILL.
//!
//! There is no Lua here. A script is recognised by the SHA1 of its exact text — the
//! texts robit itself sends, taken from robit — and run natively (see `native`).
//! Anything else is refused with an error that says so.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use robit::redis::script_sources as sources;

use super::exec::{Exec, integer};
use super::native;
use super::resp::Frame;

/// One of robit's scripts, as the simulated Redis recognises it: tests and fuzz targets
/// call the scripts by these texts and SHAs.
///
/// # Example
///
/// ```
/// use robit_sim::redis::RobitScript;
///
/// let renew = RobitScript::Renew;
/// assert_eq!(renew.sha().len(), 40);
/// assert!(renew.source().contains("PEXPIRE"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RobitScript {
    /// Grants, queues, or refuses during a quarantine.
    Acquire,
    /// Extends the caller's own grant.
    Renew,
    /// Deletes the caller's own grant, handing the lock to the next waiter.
    Release,
    /// Takes a waiter out of the queue.
    Withdraw,
}

impl RobitScript {
    /// All four.
    pub const ALL: [Self; 4] = [Self::Acquire, Self::Renew, Self::Release, Self::Withdraw];

    /// The exact text robit sends.
    pub fn source(self) -> &'static str {
        match self {
            Self::Acquire => sources::ACQUIRE,
            Self::Renew => sources::RENEW,
            Self::Release => sources::RELEASE,
            Self::Withdraw => sources::WITHDRAW,
        }
    }

    /// The script's name: `acquire`, `renew`, `release`, `withdraw`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Acquire => "acquire",
            Self::Renew => "renew",
            Self::Release => "release",
            Self::Withdraw => "withdraw",
        }
    }

    /// The SHA1 of [`source`](Self::source), in lower-case hex as Redis writes it.
    pub fn sha(self) -> &'static str {
        static SHAS: LazyLock<[String; 4]> =
            LazyLock::new(|| RobitScript::ALL.map(|kind| sha1_hex(kind.source().as_bytes())));
        &SHAS[self as usize]
    }

    fn of_text(text: &[u8]) -> Option<Self> {
        let sha = sha1_hex(text);
        Self::ALL.into_iter().find(|kind| kind.sha() == sha)
    }
}

/// SHA1 in lower-case hex.
pub(crate) fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

/// The scripts loaded so far (by SCRIPT LOAD or EVAL), by SHA1. Lost on SCRIPT FLUSH
/// and on a restart that loses state.
#[derive(Debug, Default)]
pub(crate) struct ScriptCache {
    loaded: BTreeMap<String, RobitScript>,
}

impl ScriptCache {
    fn load(&mut self, kind: RobitScript) -> &'static str {
        self.loaded.insert(kind.sha().to_owned(), kind);
        kind.sha()
    }

    fn find(&self, sha: &[u8]) -> Option<RobitScript> {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        self.loaded.get(&sha).copied()
    }

    pub(crate) fn clear(&mut self) {
        self.loaded.clear();
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// The native scripts were written against these texts. If robit's Lua changes,
    /// review `native.rs` against the new text, then update the hashes here.
    #[test]
    fn robits_scripts_are_the_ones_the_native_implementations_follow() {
        let pinned = [
            (
                RobitScript::Acquire,
                "3e74e22071d537ba645a99c3cfdd1916d811953a",
            ),
            (
                RobitScript::Renew,
                "3fe856c1e166fd96ac380ee6c2f14cb8e818fe66",
            ),
            (
                RobitScript::Release,
                "8ce955927178c85ce97fe5bc48be1bb49af00a81",
            ),
            (
                RobitScript::Withdraw,
                "92b8b4edd5a17e5c1912af9bc439518e65fe299c",
            ),
        ];
        for (kind, sha) in pinned {
            assert_eq!(
                kind.sha(),
                sha,
                "robit's {} script changed: bring the native implementation in line with \
                 it, then pin its new SHA1",
                kind.name()
            );
            assert_eq!(redis::Script::new(kind.source()).get_hash(), sha);
        }
    }

    #[test]
    fn a_text_is_recognised_only_if_it_is_exactly_one_of_robits_scripts() {
        assert_eq!(
            RobitScript::of_text(sources::RENEW.as_bytes()),
            Some(RobitScript::Renew)
        );
        let altered = format!("{} ", sources::RENEW);
        assert_eq!(RobitScript::of_text(altered.as_bytes()), None);
        assert_eq!(RobitScript::of_text(b"return 1"), None);
    }
}

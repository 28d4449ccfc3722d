//! The scripts a server has loaded, and robit's own scripts for tests to call.
//!
//! A script is any Lua a client sends: EVAL and SCRIPT LOAD compile it in the server's
//! Lua (`crate::redis::lua`) and keep it by the SHA1 of its text, for EVALSHA.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use mlua::Function;
use robit::redis::script_sources as sources;

use super::lua::{Vm, sha1_hex};
use super::resp::Frame;

/// One of robit's scripts, with the exact text robit sends: tests and fuzz targets
/// call the scripts by these texts and SHAs. The server runs them as it runs any
/// script; it does not know them.
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
}

/// A loaded script: the interpreter it was compiled in, the compiled function, and
/// its SHA1.
pub(crate) type Loaded = (Vm, Function, String);

/// The server's Lua, started on first use, and the scripts loaded into it (by SCRIPT
/// LOAD or EVAL), by SHA1. Both are lost on SCRIPT FLUSH and on a restart that loses
/// state, as in Redis, which starts a fresh interpreter then.
#[derive(Default)]
pub(crate) struct ScriptCache {
    vm: Option<Vm>,
    loaded: BTreeMap<String, Function>,
    /// Changes planted in every script loaded (`find`, `replace`).
    #[cfg(robit_mutants)]
    edits: Vec<(String, String)>,
}

impl std::fmt::Debug for ScriptCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptCache")
            .field("loaded", &self.loaded.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl ScriptCache {
    /// Compiles and keeps `body` (or finds it, if loaded already).
    pub(crate) fn load(&mut self, body: &[u8]) -> Result<Loaded, Frame> {
        let sha = sha1_hex(body);
        if let Some(found) = self.find(sha.as_bytes()) {
            return Ok(found);
        }
        if self.vm.is_none() {
            let vm = Vm::new().map_err(|error| {
                Frame::error(format!(
                    "ERR the simulated Redis could not start Lua: {error}"
                ))
            })?;
            self.vm = Some(vm);
        }
        let vm = self.vm.clone().ok_or_else(|| Frame::error("ERR no Lua"))?;
        #[cfg(robit_mutants)]
        let edited = self.edited(body);
        #[cfg(robit_mutants)]
        let body = edited.as_slice();
        let function = vm.compile(body)?;
        self.loaded.insert(sha.clone(), function.clone());
        Ok((vm, function, sha))
    }

    /// The loaded script whose SHA1 is `sha` (in either case).
    pub(crate) fn find(&self, sha: &[u8]) -> Option<Loaded> {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        let function = self.loaded.get(&sha)?;
        Some((self.vm.clone()?, function.clone(), sha))
    }

    /// Plants a change in every script loaded from now on: `find` replaced by `replace`.
    #[cfg(robit_mutants)]
    pub(crate) fn plant_edit(&mut self, find: &str, replace: &str) {
        self.edits.push((find.to_owned(), replace.to_owned()));
    }

    /// `body` with the planted changes made.
    #[cfg(robit_mutants)]
    fn edited(&self, body: &[u8]) -> Vec<u8> {
        let mut text = String::from_utf8_lossy(body).into_owned();
        for (find, replace) in &self.edits {
            text = text.replace(find.as_str(), replace);
        }
        text.into_bytes()
    }

    /// SCRIPT FLUSH, or a restart: no scripts, and a fresh interpreter next time.
    pub(crate) fn clear(&mut self) {
        self.loaded.clear();
        self.vm = None;
    }
}

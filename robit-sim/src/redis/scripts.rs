//! Which scripts the simulated Redis knows, and the cache of those loaded.
//!
//! There is no Lua here. A script is recognised by the SHA1 of its exact text — the
//! texts robit itself sends, taken from robit — and run natively (see
//! `commands::native`); the commands that load and call scripts are in `commands::eval`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use robit::redis::script_sources as sources;

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

    pub(crate) fn of_text(text: &[u8]) -> Option<Self> {
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
    pub(crate) fn load(&mut self, kind: RobitScript) -> &'static str {
        self.loaded.insert(kind.sha().to_owned(), kind);
        kind.sha()
    }

    pub(crate) fn find(&self, sha: &[u8]) -> Option<RobitScript> {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        self.loaded.get(&sha).copied()
    }

    pub(crate) fn clear(&mut self) {
        self.loaded.clear();
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

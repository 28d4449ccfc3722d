//! What an event says, in words for a person.

use super::secs;
use crate::EventKind;

/// What an event says, for a person: the host and time are shown separately.
pub(super) fn describe(kind: &EventKind) -> String {
    match kind {
        EventKind::LockCalled => "lock() called".to_owned(),
        EventKind::Acquired { lease, token } => format!("acquired lease {lease}, token {token}"),
        EventKind::LockFailed { error } => format!("lock() failed: {error}"),
        EventKind::UnlockCalled { lease } => format!("unlock() called on lease {lease}"),
        EventKind::Unlocked { lease, outcome } => format!("unlocked lease {lease}: {outcome}"),
        EventKind::Dropped { lease } => {
            format!("dropped lease {lease}: no longer held, loss not signalled yet")
        }
        EventKind::Lost { lease, reason } => format!("lost lease {lease}: {reason}"),
        EventKind::Jeopardy {
            lease,
            cleared: false,
        } => format!("lease {lease} in jeopardy: no renewal through, the deadline near"),
        EventKind::Jeopardy {
            lease,
            cleared: true,
        } => format!("lease {lease} out of jeopardy: a renewal got through"),
        EventKind::WriteSent { lease, token } => {
            format!("write sent with token {token} (lease {lease})")
        }
        EventKind::WriteAccepted { from, token } => {
            format!("write from {from} accepted, token {token}")
        }
        EventKind::WriteRejected {
            from,
            token,
            highest,
        } => format!("write from {from} REJECTED as stale: token {token}, highest seen {highest}"),
        EventKind::BackendGranted { to, token, until } => {
            format!("granted to {to}, token {token}, until {}s", secs(*until))
        }
        EventKind::BackendRenewed { by, token, until } => {
            format!("renewed by {by}, token {token}, until {}s", secs(*until))
        }
        EventKind::BackendReleased { by, token } => format!("released by {by}, token {token}"),
        EventKind::BackendStateLost => "lost all its state, every grant with it".to_owned(),
        EventKind::BackendQuarantined { by, until } => format!(
            "quarantine: no grants until {}s (state found lost by {by})",
            secs(*until)
        ),
        EventKind::Fault { what, ended: false } => format!("fault begins: {what}"),
        EventKind::Fault { what, ended: true } => format!("fault repaired: {what}"),
        EventKind::Crashed => "CRASHED".to_owned(),
        EventKind::Restarted => "restarted".to_owned(),
    }
}

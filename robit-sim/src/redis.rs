//! A simulated Redis, so that robit's *real* Redis driver runs inside a simulation.
//!
//! This first part is the wire protocol: [`resp`] decodes what clients send and encodes
//! the replies.

#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod inline;
pub mod resp;

//! A simulated Redis, so that robit's *real* Redis driver runs inside a simulation.
//!
//! [`SimRedis`] serves a [`RedisState`] on a simulated host; [`SimConnector`] connects
//! robit's [`RedisDriver`](robit::redis::RedisDriver) to it through turmoil's network.
//! Everything the driver and redis-rs send is understood, with Redis 7's replies:
//!
//! - the connection handshake (`CLIENT SETINFO`, and `HELLO 2`, `AUTH`, `SELECT 0`,
//!   `CLIENT SETNAME` for clients configured to send them), `PING`, `ECHO`, `QUIT`,
//!   `RESET`, and `INFO`'s server and replication sections, with a run id and a
//!   replication id that are new every time a host starts serving the state;
//! - `EVAL`, `EVALSHA`, `SCRIPT LOAD | EXISTS | FLUSH | KILL`, with `NOSCRIPT` for a
//!   script not loaded;
//! - `SUBSCRIBE`, `UNSUBSCRIBE`, `PUBLISH`, and `PING` in subscribe mode (RESP2 pushes);
//! - on data: `GET`, `SET` (`NX`, `XX`, `EX`, `PX`, `KEEPTTL`), `DEL`, `EXISTS`, `TYPE`,
//!   `PTTL`, `PEXPIRE` (`NX`, `XX`, `GT`, `LT`), `INCR`, `LPUSH`, `RPUSH`, `LPOP`,
//!   `LINDEX`, `LPOS` (`RANK`, `COUNT`, `MAXLEN`), `LREM`, `LLEN`, `LRANGE`, `DBSIZE`,
//!   `FLUSHALL`, `TIME`.
//!
//! Unknown commands and subcommands, wrong numbers of arguments, `WRONGTYPE` and bad
//! integers get the error replies Redis gives (a differential test holds it to that).
//!
//! # Scripts
//!
//! Scripts run in a real Lua 5.1 interpreter, as Redis 7 runs them: any script a client
//! sends, robit's as they are in `robit/src/redis/scripts/`, byte for byte. The
//! simulator does not know robit's scripts; it knows robit's key layout, to tell a
//! checker what each command did to a lock (below). See the `lua` module for the
//! script environment and what it leaves out.
//!
//! # Time
//!
//! Nothing here reads a clock of its own. The server reads the backend host's
//! [`SimClock`](crate::SimClock) once per command, and [`RedisState::execute`] takes
//! that reading as `now`; expiries are in whole milliseconds, as in Redis. `TIME`
//! answers [`EPOCH`] plus `now`.
//!
//! # What a checker sees
//!
//! [`RedisState::on_event`] reports every grant, renewal and release ([`LockEvent`]),
//! with the backend's local time and the client's host. They are derived from what
//! each command, in a script or not, does to a lock's key (the `grants` module).
//!
//! # Limits
//!
//! One database (`SELECT 0` only), RESP2 only (`HELLO 3` is refused), no passwords (the
//! default user accepts any), no pattern subscriptions, no `SET … GET | EXAT | PXAT`;
//! subcommands not listed above answer as unknown ones do.

mod commands;
mod connector;
mod events;
mod exec;
mod lock_keys;
mod lua;
mod pubsub;
pub mod resp;
mod script_cache;
mod server;
mod session;
mod state;
mod store;

pub use self::connector::SimConnector;
pub use self::events::{LockEvent, LockEventKind, Peer};
pub use self::exec::EPOCH;
pub use self::script_cache::RobitScript;
pub use self::server::{DEFAULT_PORT, SimRedis};
pub use self::state::RedisState;

#[cfg(test)]
mod tests;

//! RESP2, the Redis wire protocol: frames, an incremental decoder, and the encoder.
//!
//! The decoders take whatever bytes have arrived and answer one of three things: a whole
//! frame and how many bytes it used, "not yet" (`Ok(None)`), or an error that ends the
//! connection. They never panic and never allocate more than the input holds plus a
//! small constant: every length read from the wire is checked against a limit before it
//! is trusted, and arrays nest at most [`MAX_DEPTH`] deep.
//!
//! [`Frame`] and its encoder are in `frame`, the decoders in `decode` (inline commands,
//! a line of words, in `inline`), and [`RespError`] in `error`.

mod decode;
mod error;
mod frame;
mod inline;

pub(crate) use self::decode::decimal;
pub use self::decode::{decode, decode_command};
pub use self::error::RespError;
pub use self::frame::Frame;

/// The longest bulk string accepted, in bytes (a script text is a few KiB).
pub const MAX_BULK_LEN: usize = 16 * 1024 * 1024;
/// The most elements an array may declare.
pub const MAX_ARRAY_LEN: usize = 1024 * 1024;
/// How deep arrays may nest (client commands are one level deep).
pub const MAX_DEPTH: usize = 8;
/// The longest line: a simple string, an error, a length header or an inline command.
pub const MAX_LINE_LEN: usize = 64 * 1024;

/// A client command as it arrives: the command's name, then its arguments, as bytes
/// (Redis commands are binary-safe).
///
/// # Example
///
/// ```
/// use robit_sim::redis::resp::{Command, decode_command};
///
/// let expected: Command = vec![b"PTTL".to_vec(), b"{robit}:lock:job".to_vec()];
/// assert_eq!(decode_command(b"PTTL {robit}:lock:job\r\n")?, Some((expected, 23)));
/// # Ok::<(), robit_sim::redis::resp::RespError>(())
/// ```
pub type Command = Vec<Vec<u8>>;

#[cfg(test)]
mod tests;

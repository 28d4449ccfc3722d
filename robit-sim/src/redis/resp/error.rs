//! [`RespError`]: why bytes are not RESP.

use std::fmt;

use super::{MAX_ARRAY_LEN, MAX_BULK_LEN, MAX_DEPTH, MAX_LINE_LEN};

/// Why bytes are not RESP: the connection they came on cannot be resynchronised, so the
/// server answers with the message and closes it.
///
/// # Example
///
/// ```
/// use robit_sim::redis::resp::{RespError, decode};
///
/// let err = decode(b"?what\r\n").unwrap_err();
/// assert_eq!(err, RespError::UnknownType(b'?'));
/// assert!(err.to_string().contains("'?'"));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RespError {
    /// A frame started with a byte that is not a RESP2 type marker.
    #[error("expected a frame type (one of + - : $ *), got {}", Byte(*.0))]
    UnknownType(u8),
    /// An element of a client command was not a bulk string.
    #[error("expected '$' (a bulk string) in a command, got {}", Byte(*.0))]
    NotBulk(u8),
    /// A line went on for more than [`MAX_LINE_LEN`] bytes without a CRLF.
    #[error("a line ran past {MAX_LINE_LEN} bytes without a CRLF")]
    LineTooLong,
    /// An integer or length was not a decimal number that fits in 64 bits.
    #[error("invalid {what}: {text:?}")]
    InvalidNumber {
        /// What was being read: "integer", "bulk length" or "array length".
        what: &'static str,
        /// The offending text (lossily decoded).
        text: String,
    },
    /// A bulk string declared more than [`MAX_BULK_LEN`] bytes.
    #[error("a bulk string of {0} bytes is longer than the limit of {MAX_BULK_LEN}")]
    BulkTooLong(i64),
    /// An array declared more than [`MAX_ARRAY_LEN`] elements.
    #[error("an array of {0} elements is longer than the limit of {MAX_ARRAY_LEN}")]
    ArrayTooLong(i64),
    /// Arrays nested more than [`MAX_DEPTH`] deep.
    #[error("arrays nest deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// A bulk string's data was not followed by CRLF.
    #[error("a bulk string's data is not followed by CRLF")]
    MissingCrlf,
    /// An inline command has a quote that is not closed, or is closed mid-word.
    #[error("unbalanced quotes in an inline command")]
    UnbalancedQuotes,
}

/// A byte as the error messages show it: `'x'`, or `0xNN` when unprintable.
struct Byte(u8);

impl fmt::Display for Byte {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_ascii_graphic() || self.0 == b' ' {
            write!(f, "'{}'", char::from(self.0))
        } else {
            write!(f, "0x{:02x}", self.0)
        }
    }
}

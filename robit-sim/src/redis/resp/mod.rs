//! RESP2, the Redis wire protocol: frames, an incremental decoder, and the encoder.
//!
//! The decoders take whatever bytes have arrived and answer one of three things: a whole
//! frame and how many bytes it used, "not yet" (`Ok(None)`), or an error that ends the
//! connection. They never panic and never allocate more than the input holds plus a
//! small constant: every length read from the wire is checked against a limit before it
//! is trusted, and arrays nest at most [`MAX_DEPTH`] deep.

use std::fmt;

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

/// Pre-allocation for an array of declared length: the declaration is not trusted.
const PREALLOCATE: usize = 16;

/// One RESP2 value, as a server sends it (or, for arrays of bulk strings, as a client
/// does).
///
/// The simulated Redis speaks RESP2 only, which is what redis-rs uses unless told
/// otherwise; its replies are built as frames and encoded with [`Frame::encode`].
///
/// # Example
///
/// ```
/// use robit_sim::redis::resp::{Frame, decode};
///
/// let reply = Frame::Array(vec![Frame::Integer(1), Frame::bulk("7")]);
/// let bytes = reply.to_bytes();
/// assert_eq!(bytes, b"*2\r\n:1\r\n$1\r\n7\r\n");
/// assert_eq!(decode(&bytes)?, Some((reply, bytes.len())));
/// # Ok::<(), robit_sim::redis::resp::RespError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Frame {
    /// `+OK`: a short status line.
    Simple(Vec<u8>),
    /// `-ERR …`: an error reply; its first word is the error code.
    Error(Vec<u8>),
    /// `:42`.
    Integer(i64),
    /// `$3\r\nabc`: a binary-safe string.
    Bulk(Vec<u8>),
    /// `$-1`: no value (GET of a missing key).
    NullBulk,
    /// `*2\r\n…`: a sequence of frames.
    Array(Vec<Frame>),
    /// `*-1`: no array (LPOP with a count, of a missing key).
    NullArray,
}

impl Frame {
    /// `+OK`.
    pub fn ok() -> Self {
        Self::simple("OK")
    }

    /// A status reply.
    pub fn simple(status: &str) -> Self {
        Self::Simple(status.as_bytes().to_vec())
    }

    /// An error reply; `message` starts with its code (`ERR`, `WRONGTYPE`, …).
    pub fn error(message: impl AsRef<str>) -> Self {
        Self::Error(message.as_ref().as_bytes().to_vec())
    }

    /// A bulk string.
    pub fn bulk(bytes: impl AsRef<[u8]>) -> Self {
        Self::Bulk(bytes.as_ref().to_vec())
    }

    /// The frame's wire form.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// Appends the frame's wire form to `out`. A CR or LF inside a status or error line
    /// (which would end it early) is sent as a space, as Redis does.
    pub fn encode(&self, out: &mut Vec<u8>) {
        fn line(out: &mut Vec<u8>, kind: u8, text: &[u8]) {
            out.push(kind);
            out.extend(
                text.iter()
                    .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
            );
            out.extend_from_slice(b"\r\n");
        }
        match self {
            Self::Simple(text) => line(out, b'+', text),
            Self::Error(text) => line(out, b'-', text),
            Self::Integer(value) => line(out, b':', value.to_string().as_bytes()),
            Self::Bulk(bytes) => {
                line(out, b'$', bytes.len().to_string().as_bytes());
                out.extend_from_slice(bytes);
                out.extend_from_slice(b"\r\n");
            }
            Self::NullBulk => out.extend_from_slice(b"$-1\r\n"),
            Self::Array(items) => {
                line(out, b'*', items.len().to_string().as_bytes());
                for item in items {
                    item.encode(out);
                }
            }
            Self::NullArray => out.extend_from_slice(b"*-1\r\n"),
        }
    }
}

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

/// Decodes one frame of any type from the start of `buf`.
///
/// `Ok(None)` means `buf` holds the start of a frame but not all of it yet; call again
/// with more bytes.
///
/// # Errors
///
/// A [`RespError`] if `buf` does not start with a well-formed frame within the limits.
///
/// # Example
///
/// ```
/// use robit_sim::redis::resp::{Frame, decode};
///
/// assert_eq!(decode(b"$5\r\nhel")?, None);
/// assert_eq!(decode(b"$5\r\nhello\r\n+OK")?, Some((Frame::bulk("hello"), 11)));
/// # Ok::<(), robit_sim::redis::resp::RespError>(())
/// ```
pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, RespError> {
    let mut cursor = Cursor { buf, pos: 0 };
    Ok(cursor.frame(0)?.map(|frame| (frame, cursor.pos)))
}

/// Decodes one client command from the start of `buf`: an array of bulk strings, or an
/// inline command (a line of words, with Redis's quoting rules).
///
/// An empty command (an empty line, `*0` or `*-1`) decodes as no words; the server
/// skips it, as Redis does.
///
/// # Errors
///
/// A [`RespError`] if `buf` does not start with a well-formed command within the limits.
///
/// # Example
///
/// ```
/// use robit_sim::redis::resp::decode_command;
///
/// let (words, used) = decode_command(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")?.unwrap();
/// assert_eq!((words, used), (vec![b"GET".to_vec(), b"k".to_vec()], 20));
/// let (words, _) = decode_command(b"SET k \"a b\"\r\n")?.unwrap();
/// assert_eq!(words[2], b"a b");
/// # Ok::<(), robit_sim::redis::resp::RespError>(())
/// ```
pub fn decode_command(buf: &[u8]) -> Result<Option<(Command, usize)>, RespError> {
    let mut cursor = Cursor { buf, pos: 0 };
    let words = match buf.first() {
        None => return Ok(None),
        Some(b'*') => cursor.command()?,
        Some(_) => cursor.inline()?,
    };
    Ok(words.map(|words| (words, cursor.pos)))
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// `let Some(x) = …? else { return Ok(None) }`, shortened.
macro_rules! ready {
    ($e:expr) => {
        match $e? {
            Some(value) => value,
            None => return Ok(None),
        }
    };
}

impl Cursor<'_> {
    fn byte(&mut self) -> Option<u8> {
        let byte = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(byte)
    }

    /// The rest of the current line, without its CRLF.
    fn line(&mut self) -> Result<Option<Vec<u8>>, RespError> {
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        let window = &rest[..rest.len().min(MAX_LINE_LEN + 2)];
        match window.windows(2).position(|pair| pair == b"\r\n") {
            Some(end) => {
                self.pos += end + 2;
                Ok(Some(window[..end].to_vec()))
            }
            None if rest.len() >= MAX_LINE_LEN + 2 => Err(RespError::LineTooLong),
            None => Ok(None),
        }
    }

    fn number(&mut self, what: &'static str) -> Result<Option<i64>, RespError> {
        let line = ready!(self.line());
        parse_i64(&line)
            .map(Some)
            .ok_or_else(|| RespError::InvalidNumber {
                what,
                text: String::from_utf8_lossy(&line).into_owned(),
            })
    }

    /// A bulk string's body, after its `$`: `None` for `$-1`.
    fn bulk(&mut self) -> Result<Option<Option<Vec<u8>>>, RespError> {
        let len = ready!(self.number("bulk length"));
        if len == -1 {
            return Ok(Some(None));
        }
        let size = usize::try_from(len).map_err(|_| RespError::InvalidNumber {
            what: "bulk length",
            text: len.to_string(),
        })?;
        if size > MAX_BULK_LEN {
            return Err(RespError::BulkTooLong(len));
        }
        let Some(data) = self.buf.get(self.pos..self.pos + size) else {
            return Ok(None);
        };
        let Some(end) = self.buf.get(self.pos + size..self.pos + size + 2) else {
            return Ok(None);
        };
        if end != b"\r\n" {
            return Err(RespError::MissingCrlf);
        }
        self.pos += size + 2;
        Ok(Some(Some(data.to_vec())))
    }

    /// An array's declared length, after its `*`: `None` for `*-1`.
    fn array_len(&mut self) -> Result<Option<Option<usize>>, RespError> {
        let len = ready!(self.number("array length"));
        if len == -1 {
            return Ok(Some(None));
        }
        let size = usize::try_from(len).map_err(|_| RespError::InvalidNumber {
            what: "array length",
            text: len.to_string(),
        })?;
        if size > MAX_ARRAY_LEN {
            return Err(RespError::ArrayTooLong(len));
        }
        Ok(Some(Some(size)))
    }

    fn frame(&mut self, depth: usize) -> Result<Option<Frame>, RespError> {
        let Some(kind) = self.byte() else {
            return Ok(None);
        };
        let frame = match kind {
            b'+' => Frame::Simple(ready!(self.line())),
            b'-' => Frame::Error(ready!(self.line())),
            b':' => Frame::Integer(ready!(self.number("integer"))),
            b'$' => ready!(self.bulk()).map_or(Frame::NullBulk, Frame::Bulk),
            b'*' => {
                if depth >= MAX_DEPTH {
                    return Err(RespError::TooDeep);
                }
                let Some(len) = ready!(self.array_len()) else {
                    return Ok(Some(Frame::NullArray));
                };
                let mut items = Vec::with_capacity(len.min(PREALLOCATE));
                for _ in 0..len {
                    items.push(ready!(self.frame(depth + 1)));
                }
                Frame::Array(items)
            }
            other => return Err(RespError::UnknownType(other)),
        };
        Ok(Some(frame))
    }

    fn command(&mut self) -> Result<Option<Command>, RespError> {
        self.pos += 1; // the '*'
        let Some(len) = ready!(self.array_len()) else {
            return Ok(Some(Vec::new()));
        };
        let mut words = Vec::with_capacity(len.min(PREALLOCATE));
        for _ in 0..len {
            match self.byte() {
                None => return Ok(None),
                Some(b'$') => {}
                Some(other) => return Err(RespError::NotBulk(other)),
            }
            let Some(word) = ready!(self.bulk()) else {
                return Err(RespError::InvalidNumber {
                    what: "bulk length",
                    text: "-1".to_owned(),
                });
            };
            words.push(word);
        }
        Ok(Some(words))
    }

    fn inline(&mut self) -> Result<Option<Command>, RespError> {
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        let window = &rest[..rest.len().min(MAX_LINE_LEN + 1)];
        let Some(end) = window.iter().position(|&b| b == b'\n') else {
            return if rest.len() > MAX_LINE_LEN {
                Err(RespError::LineTooLong)
            } else {
                Ok(None)
            };
        };
        self.pos += end + 1;
        let line = window[..end].strip_suffix(b"\r").unwrap_or(&window[..end]);
        super::inline::split(line).map(Some)
    }
}

/// A decimal `i64`: an optional `-`, then digits; nothing else, no overflow.
fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    decimal(negative, digits)
}

/// The value of ASCII `digits` (already checked to be digits), negated if `negative`;
/// `None` on overflow. Shared by the protocol's lengths and the commands' integers.
pub(crate) fn decimal(negative: bool, digits: &[u8]) -> Option<i64> {
    let mut value: i64 = 0;
    for &digit in digits {
        let digit = i64::from(digit - b'0');
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(digit)?
        } else {
            value.checked_add(digit)?
        };
    }
    Some(value)
}

#[cfg(test)]
mod tests;

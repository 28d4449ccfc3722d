//! The incremental decoders: any frame ([`decode`]), and a client command
//! ([`decode_command`]), each from the start of the bytes that have arrived.

use super::{Command, Frame, MAX_ARRAY_LEN, MAX_BULK_LEN, MAX_DEPTH, MAX_LINE_LEN, RespError};

/// Pre-allocation for an array of declared length: the declaration is not trusted.
const PREALLOCATE: usize = 16;

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

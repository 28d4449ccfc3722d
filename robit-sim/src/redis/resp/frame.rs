//! [`Frame`], one RESP2 value, and its encoder.

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

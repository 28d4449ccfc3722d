//! Lua's side of the native scripts: `redis.call` and `redis.pcall`, Redis 7's error
//! suffix, and how values cross between Lua and Redis (Lua's numbers are doubles).

use super::{check, dispatch};
use crate::redis::events::{LockEvent, LockEventKind};
use crate::redis::exec::Exec;
use crate::redis::resp::Frame;
use crate::redis::scripts::RobitScript;

/// A `redis.call` site: text that finds it in the script, and which occurrence.
pub(crate) type Site = (&'static str, usize);

/// The reply that ends a failed script.
pub(crate) type Raised = Frame;

/// One run of a native script: the command context its calls run in, and which
/// script it is (its SHA1 and text name a failure).
pub(crate) struct Script<'e, 'a> {
    pub(crate) exec: &'e mut Exec<'a>,
    pub(crate) kind: RobitScript,
}

impl Script<'_, '_> {
    fn command(&mut self, args: &[&[u8]]) -> Frame {
        let args: Vec<Vec<u8>> = args.iter().map(|arg| arg.to_vec()).collect();
        match check(&args) {
            Ok(name) => dispatch(self.exec, &name, &args),
            Err(error) => error,
        }
    }

    /// `redis.call`: a failure ends the script.
    pub(crate) fn call(&mut self, site: Site, args: &[&[u8]]) -> Result<Frame, Raised> {
        match self.command(args) {
            Frame::Error(mut message) => {
                let line = line_of(self.kind.source(), site);
                let suffix = format!(" script: {}, on @user_script:{line}.", self.kind.sha());
                message.extend_from_slice(suffix.as_bytes());
                Err(Frame::Error(message))
            }
            reply => Ok(reply),
        }
    }

    /// `redis.pcall`: a failure is a value like any other.
    pub(crate) fn pcall(&mut self, args: &[&[u8]]) -> Frame {
        self.command(args)
    }

    pub(crate) fn lua_error(&self, what: &str) -> Raised {
        Frame::error(format!(
            "ERR user_script: {what} (a Lua runtime error, as the simulator words it) \
             script: {}",
            self.kind.sha()
        ))
    }

    pub(crate) fn event(&mut self, kind: LockEventKind) {
        self.exec.events.push(LockEvent {
            at: self.exec.now,
            peer: self.exec.peer.clone(),
            kind,
        });
    }
}

/// The 1-based line of `site` in `source` (0 if it is not there, which a test rules out).
pub(crate) fn line_of(source: &str, (needle, occurrence): Site) -> usize {
    source
        .match_indices(needle)
        .nth(occurrence)
        .map_or(0, |(at, _)| {
            let start = at + needle.len() - needle.trim_start().len();
            source[..start].matches('\n').count() + 1
        })
}

/// A reply as Lua sees a string: `false` (here `None`) for a nil bulk.
pub(crate) fn string(reply: Frame) -> Option<Vec<u8>> {
    match reply {
        Frame::Bulk(bytes) => Some(bytes),
        _ => None,
    }
}

/// A reply as Lua sees an integer: a double.
#[allow(clippy::cast_precision_loss)] // as Lua does
pub(crate) fn number(reply: &Frame) -> f64 {
    match reply {
        Frame::Integer(value) => *value as f64,
        _ => f64::NAN,
    }
}

/// Lua 5.1's `tonumber` on a string, for the forms it can meet here: decimal numbers
/// (with fraction or exponent), `0x` hexadecimal integers, surrounding white space; the
/// string ends at a NUL byte, as C reads it.
pub(crate) fn tonumber(text: &[u8]) -> Option<f64> {
    let text = text.split(|&b| b == 0).next().unwrap_or_default();
    let text = std::str::from_utf8(text).ok()?;
    let text = text.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b');
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        #[allow(clippy::cast_precision_loss)]
        return u64::from_str_radix(hex, 16).ok().map(|value| value as f64);
    }
    let decimal = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    decimal.then(|| text.parse().ok()).flatten()
}

/// A Lua number passed to `redis.call`: Redis formats it with `%.17g`, which is a plain
/// integer for integral values below 1e17 and otherwise something no integer argument
/// accepts (here Rust's own float notation, which no integer argument accepts either).
pub(crate) fn argument(value: f64) -> Vec<u8> {
    let integral = value.fract() == 0.0 && value.abs() < 1e17;
    if integral && !(value == 0.0 && value.is_sign_negative()) {
        #[allow(clippy::cast_possible_truncation)]
        let value = value as i64;
        value.to_string().into_bytes()
    } else {
        format!("{value:?}").into_bytes()
    }
}

/// A Lua table `{status, value}` as Redis replies it: numbers truncated to integers.
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn pair(status: i64, value: f64) -> Frame {
    Frame::Array(vec![Frame::Integer(status), Frame::Integer(value as i64)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::store::parse_integer;

    #[test]
    fn numbers_cross_between_lua_and_redis_as_they_do_in_redis() {
        assert_eq!(tonumber(b" 250 "), Some(250.0));
        assert_eq!(tonumber(b"1e3"), Some(1000.0));
        assert_eq!(tonumber(b"0x10"), Some(16.0));
        assert_eq!(tonumber(b"12\0junk"), Some(12.0));
        assert_eq!(tonumber(b""), None);
        assert_eq!(tonumber(b"12ms"), None);
        assert_eq!(argument(1000.0), b"1000");
        assert_eq!(parse_integer(&argument(2.5)), None);
        assert_eq!(parse_integer(&argument(1e17)), None);
        assert_eq!(parse_integer(&argument(-0.0)), None);
    }
}

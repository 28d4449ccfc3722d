//! How values cross between Lua and the server, by Redis 7's rules (RESP2).
//!
//! A reply becomes a Lua value: an integer a number, a bulk string a string, a nil
//! `false`, an array a table, a status `{ok = …}`, an error `{err = …}`. A script's
//! result becomes a reply the other way round: a number truncated to an integer, `true`
//! the integer 1, `false` and `nil` a nil, a table with a string `err` an error, with a
//! string `ok` a status, with a number `double` a bulk string, and otherwise an array
//! of its elements up to the first `nil`.

use mlua::{Lua, MultiValue, Table, Value};

use crate::redis::resp::Frame;

/// A command's arguments as a script passes them to `redis.call`: strings as they
/// are, numbers as `%.17g` writes them. Anything else is the error Redis raises.
pub(super) fn arguments(values: &MultiValue) -> Result<Vec<Vec<u8>>, &'static str> {
    if values.is_empty() {
        return Err("Please specify at least one argument for this redis lib call");
    }
    values
        .iter()
        .map(|value| match value {
            Value::String(text) => Ok(text.as_bytes().to_vec()),
            Value::Number(number) => Ok(format_g17(*number).into_bytes()),
            #[allow(clippy::cast_precision_loss)] // as Lua itself converts
            Value::Integer(number) => Ok(format_g17(*number as f64).into_bytes()),
            _ => Err("Lua redis lib command arguments must be strings or integers"),
        })
        .collect()
}

/// A reply as the script sees it.
pub(super) fn to_lua(lua: &Lua, reply: Frame) -> mlua::Result<Value> {
    Ok(match reply {
        #[allow(clippy::cast_precision_loss)] // Lua 5.1's numbers are doubles
        Frame::Integer(value) => Value::Number(value as f64),
        Frame::Bulk(bytes) => Value::String(lua.create_string(bytes)?),
        Frame::NullBulk | Frame::NullArray => Value::Boolean(false),
        Frame::Simple(status) => {
            let table = lua.create_table()?;
            table.raw_set("ok", lua.create_string(status)?)?;
            Value::Table(table)
        }
        Frame::Error(message) => {
            let text = error_text(&[b"-", &message[..]].concat());
            Value::Table(error_table(lua, &text)?)
        }
        Frame::Array(items) => {
            let table = lua.create_table_with_capacity(items.len(), 0)?;
            for (index, item) in items.into_iter().enumerate() {
                table.raw_set(index + 1, to_lua(lua, item)?)?;
            }
            Value::Table(table)
        }
    })
}

/// `{err = text}`, Redis's error table (`text` as [`error_text`] words it).
pub(super) fn error_table(lua: &Lua, text: &[u8]) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    table.raw_set("err", lua.create_string(text)?)?;
    Ok(table)
}

/// An error as Redis's scripts carry it: `-CODE message` keeps its code, anything else
/// gets `ERR`; the message loses surrounding line breaks.
pub(super) fn error_text(text: &[u8]) -> Vec<u8> {
    let (code, message): (&[u8], &[u8]) = match text.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&b| b == b' ') {
            Some(space) => (&rest[..space], &rest[space + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", text),
    };
    let breaks = |b: &u8| *b == b'\r' || *b == b'\n';
    let start = message
        .iter()
        .position(|b| !breaks(b))
        .unwrap_or(message.len());
    let end = message
        .iter()
        .rposition(|b| !breaks(b))
        .map_or(start, |at| at + 1);
    [code, b" ", &message[start..end]].concat()
}

/// How deep a script's result may nest tables (a table that holds itself would nest
/// forever); deeper, the reply is Redis's error for it.
const MAX_DEPTH: usize = 1_000;

/// A script's result as the reply Redis sends.
pub(super) fn to_reply(value: &Value) -> mlua::Result<Frame> {
    reply_at(value, 0)
}

fn reply_at(value: &Value, depth: usize) -> mlua::Result<Frame> {
    Ok(match value {
        Value::Boolean(true) => Frame::Integer(1),
        Value::Number(number) => Frame::Integer(c_cast(*number)),
        Value::Integer(number) => Frame::Integer(*number),
        Value::String(text) => Frame::Bulk(text.as_bytes().to_vec()),
        Value::Table(_) if depth >= MAX_DEPTH => Frame::error("ERR reached lua stack limit"),
        Value::Table(table) => table_reply(table, depth)?,
        _ => Frame::NullBulk,
    })
}

fn table_reply(table: &Table, depth: usize) -> mlua::Result<Frame> {
    if let Value::String(message) = table.raw_get::<Value>("err")? {
        return Ok(Frame::Error(one_line(&message.as_bytes())));
    }
    if let Value::String(status) = table.raw_get::<Value>("ok")? {
        return Ok(Frame::Simple(one_line(&status.as_bytes())));
    }
    if let Value::Number(number) = table.raw_get::<Value>("double")? {
        return Ok(Frame::Bulk(format_g17(number).into_bytes()));
    }
    let mut items = Vec::new();
    for index in 1.. {
        let item: Value = table.raw_get(index)?;
        if item.is_nil() {
            break;
        }
        items.push(reply_at(&item, depth + 1)?);
    }
    Ok(Frame::Array(items))
}

/// A status or error line, with line breaks turned into spaces as Redis does.
pub(super) fn one_line(text: &[u8]) -> Vec<u8> {
    text.iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect()
}

/// C's `(long long)` of a double on the machines Redis runs on: truncation, and the
/// smallest integer for what does not fit (NaN, infinities, out of range).
#[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
fn c_cast(number: f64) -> i64 {
    const LIMIT: f64 = i64::MAX as f64; // 2^63
    if !(-LIMIT..LIMIT).contains(&number) {
        i64::MIN
    } else {
        number as i64
    }
}

/// C's `printf("%.17g", number)`.
pub(super) fn format_g17(number: f64) -> String {
    const PRECISION: i32 = 17;
    if number.is_nan() {
        return if number.is_sign_negative() {
            "-nan"
        } else {
            "nan"
        }
        .to_owned();
    }
    if number.is_infinite() {
        return if number < 0.0 { "-inf" } else { "inf" }.to_owned();
    }
    if number == 0.0 {
        return if number.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // Rounded to 17 significant digits, which fixes the exponent %g decides by.
    let scientific = format!("{:.*e}", (PRECISION - 1) as usize, number);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..PRECISION).contains(&exponent) {
        let decimals = usize::try_from(PRECISION - 1 - exponent).unwrap_or(0);
        trim_zeros(&format!("{number:.decimals$}"))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim_zeros(mantissa), exponent.abs())
    }
}

/// `%g`'s removal of trailing zeros after the decimal point (and of the point).
fn trim_zeros(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_printf_writes_them_with_17_significant_digits() {
        let cases = [
            (1000.0, "1000"),
            (1.5, "1.5"),
            (0.1, "0.10000000000000001"),
            (1e20, "1e+20"),
            (1e17, "1e+17"),
            (12_345_678_901_234_567.0, "12345678901234568"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (-2.5, "-2.5"),
            (-0.0, "-0"),
            (f64::INFINITY, "inf"),
        ];
        for (number, written) in cases {
            assert_eq!(format_g17(number), written, "{number:?}");
        }
    }

    #[test]
    fn numbers_become_integers_as_a_c_cast_makes_them() {
        assert_eq!(c_cast(3.99), 3);
        assert_eq!(c_cast(-3.2), -3);
        assert_eq!(c_cast(-0.5), 0);
        assert_eq!(c_cast(f64::INFINITY), i64::MIN);
        assert_eq!(c_cast(f64::NAN), i64::MIN);
    }

    #[test]
    fn an_error_keeps_its_code_or_gets_err() {
        assert_eq!(error_text(b"-X y"), b"X y");
        assert_eq!(error_text(b"-noprefix"), b"ERR noprefix");
        assert_eq!(error_text(b"plain words"), b"ERR plain words");
        assert_eq!(
            error_text(b"-WRONGTYPE Operation\r\n"),
            b"WRONGTYPE Operation"
        );
    }
}

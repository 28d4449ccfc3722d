//! Inline commands: a line of words, as a person types them into a raw connection,
//! split with Redis's quoting rules.

use super::{Command, RespError};

/// Splits an inline command into words as Redis does: whitespace separates words;
/// "double quotes" allow `\n \r \t \b \a \\ \" \xHH` escapes; 'single quotes' allow
/// `\'`; a closing quote must end the word. A NUL byte ends the line.
pub(crate) fn split(line: &[u8]) -> Result<Command, RespError> {
    let line = line.split(|&b| b == 0).next().unwrap_or_default();
    let space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let mut words = Vec::new();
    let mut i = 0;
    loop {
        while line.get(i).is_some_and(|&b| space(b)) {
            i += 1;
        }
        if i >= line.len() {
            return Ok(words);
        }
        let mut word = Vec::new();
        loop {
            match line.get(i) {
                None => break,
                Some(&b) if space(b) => break,
                Some(b'"') => i = double_quoted(line, i + 1, &mut word)?,
                Some(b'\'') => i = single_quoted(line, i + 1, &mut word)?,
                Some(&b) => {
                    word.push(b);
                    i += 1;
                }
            }
        }
        words.push(word);
    }
}

/// Reads a double-quoted part starting after its quote; returns where the word goes on.
fn double_quoted(line: &[u8], mut i: usize, word: &mut Vec<u8>) -> Result<usize, RespError> {
    loop {
        match (line.get(i), line.get(i + 1)) {
            (None, _) => return Err(RespError::UnbalancedQuotes),
            (Some(b'"'), next) => {
                return match next {
                    None => Ok(i + 1),
                    Some(&b) if b.is_ascii_whitespace() || b == 0x0b => Ok(i + 1),
                    Some(_) => Err(RespError::UnbalancedQuotes),
                };
            }
            (Some(b'\\'), Some(b'x')) => {
                let hex = line.get(i + 2..i + 4).and_then(|pair| {
                    std::str::from_utf8(pair)
                        .ok()
                        .filter(|text| text.bytes().all(|b| b.is_ascii_hexdigit()))
                        .and_then(|text| u8::from_str_radix(text, 16).ok())
                });
                match hex {
                    Some(byte) => {
                        word.push(byte);
                        i += 4;
                    }
                    None => {
                        word.push(b'x');
                        i += 2;
                    }
                }
            }
            (Some(b'\\'), Some(&escaped)) => {
                word.push(match escaped {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'b' => 0x08,
                    b'a' => 0x07,
                    other => other,
                });
                i += 2;
            }
            (Some(&b), _) => {
                word.push(b);
                i += 1;
            }
        }
    }
}

/// Reads a single-quoted part starting after its quote; returns where the word goes on.
fn single_quoted(line: &[u8], mut i: usize, word: &mut Vec<u8>) -> Result<usize, RespError> {
    loop {
        match (line.get(i), line.get(i + 1)) {
            (None, _) => return Err(RespError::UnbalancedQuotes),
            (Some(b'\\'), Some(b'\'')) => {
                word.push(b'\'');
                i += 2;
            }
            (Some(b'\''), next) => {
                return match next {
                    None => Ok(i + 1),
                    Some(&b) if b.is_ascii_whitespace() || b == 0x0b => Ok(i + 1),
                    Some(_) => Err(RespError::UnbalancedQuotes),
                };
            }
            (Some(&b), _) => {
                word.push(b);
                i += 1;
            }
        }
    }
}

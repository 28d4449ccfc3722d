//! Feeds arbitrary bytes to the simulated Redis's RESP2 decoders,
//! `robit_sim::redis::resp::{decode, decode_command}`, which must never panic, and
//! checks what they answer:
//!
//! - a decoded frame or command used at most the bytes it was given, and decodes the
//!   same from exactly those bytes;
//! - re-encoding a decoded frame and decoding that gives the same frame back (with a CR
//!   or LF inside a status or error line sent as a space, as the encoder documents), in
//!   no more bytes than it came in; a decoded command, sent as an array of bulk strings,
//!   decodes to the same words;
//! - an array command decoded by `decode_command` is the array `decode` sees;
//! - a prefix of the input decodes to `Ok(None)` ("not yet") or, when the whole input is
//!   an error, to an error of the same kind; never to a frame, and never to an error
//!   where the whole input is a frame.
#![no_main]

use std::mem::discriminant;

use libfuzzer_sys::fuzz_target;

#[path = "frames.rs"]
mod frames;
use frames::{depth, normalised};
use robit_sim::redis::resp::{Command, Frame, MAX_DEPTH, RespError, decode, decode_command};

/// Every prefix length is tried up to this input length; beyond, a sample of them.
const ALL_PREFIXES_UP_TO: usize = 128;
const SAMPLED_PREFIXES: usize = 64;

/// A command as redis-rs sends it: an array of bulk strings.
fn encode_command(words: &Command) -> Vec<u8> {
    Frame::Array(words.iter().map(Frame::bulk).collect()).to_bytes()
}

/// The prefix lengths to try: all of them for short inputs, a spread for long ones.
fn prefixes(len: usize) -> impl Iterator<Item = usize> {
    let step = if len <= ALL_PREFIXES_UP_TO {
        1
    } else {
        len / SAMPLED_PREFIXES
    };
    (0..len)
        .step_by(step.max(1))
        .chain(len.saturating_sub(2)..len)
}

/// What a decoder answered for a prefix of what it answered `whole` for.
fn check_prefix<T: std::fmt::Debug>(
    what: &str,
    cut: usize,
    whole: &Result<Option<(T, usize)>, RespError>,
    prefix: &Result<Option<(T, usize)>, RespError>,
) {
    match (whole, prefix) {
        (_, Ok(None)) => {}
        (Err(whole), Err(part)) => assert_eq!(
            discriminant(whole),
            discriminant(part),
            "{what}: the first {cut} bytes fail with {part:?}, the whole input with {whole:?}"
        ),
        _ => panic!(
            "{what}: the first {cut} bytes decode to {prefix:?}, the whole input to {whole:?}"
        ),
    }
}

fn check_frame(input: &[u8]) {
    let whole = decode(input);
    if let Ok(Some((frame, used))) = &whole {
        let used = *used;
        assert!(
            (1..=input.len()).contains(&used),
            "decode used {used} of {} bytes",
            input.len()
        );
        assert!(
            depth(frame) <= MAX_DEPTH,
            "a frame nested {} deep",
            depth(frame)
        );
        assert_eq!(
            decode(&input[..used]),
            Ok(Some((frame.clone(), used))),
            "the frame does not decode from its own bytes"
        );
        let expected = normalised(frame);
        let bytes = frame.to_bytes();
        assert_eq!(
            decode(&bytes),
            Ok(Some((expected, bytes.len()))),
            "the re-encoded frame {bytes:?} does not decode to the frame"
        );
        assert!(
            bytes.len() <= used,
            "re-encoded in {} bytes, more than the {used} it came in",
            bytes.len()
        );
    }
    let end = match &whole {
        Ok(Some((_, used))) => *used,
        _ => input.len(),
    };
    for cut in prefixes(end) {
        check_prefix("decode", cut, &whole, &decode(&input[..cut]));
    }
}

fn check_command(input: &[u8]) {
    let whole = decode_command(input);
    if let Ok(Some((words, used))) = &whole {
        let used = *used;
        assert!(
            (1..=input.len()).contains(&used),
            "decode_command used {used} of {} bytes",
            input.len()
        );
        assert_eq!(
            decode_command(&input[..used]),
            Ok(Some((words.clone(), used))),
            "the command does not decode from its own bytes"
        );
        let bytes = encode_command(words);
        assert_eq!(
            decode_command(&bytes),
            Ok(Some((words.clone(), bytes.len()))),
            "the re-encoded command {bytes:?} does not decode to the same words"
        );
        if input[0] == b'*' {
            // An array command is an array frame of bulk strings (`*-1` is no array).
            let frame = match decode(&input[..used]) {
                Ok(Some((frame, n))) if n == used => frame,
                other => panic!("decode_command read a command, decode answers {other:?}"),
            };
            let as_words = match frame {
                Frame::NullArray => Vec::new(),
                Frame::Array(items) => items
                    .into_iter()
                    .map(|item| match item {
                        Frame::Bulk(word) => word,
                        other => panic!("decode_command accepted {other:?} as a word"),
                    })
                    .collect(),
                other => panic!("decode_command read an array, decode answers {other:?}"),
            };
            assert_eq!(&as_words, words, "decode and decode_command disagree");
        }
    }
    let end = match &whole {
        Ok(Some((_, used))) => *used,
        _ => input.len(),
    };
    for cut in prefixes(end) {
        check_prefix(
            "decode_command",
            cut,
            &whole,
            &decode_command(&input[..cut]),
        );
    }
}

fuzz_target!(|input: &[u8]| {
    check_frame(input);
    check_command(input);
    // A pipeline: what follows the first frame or command decodes on its own.
    if let Ok(Some((_, used))) = decode_command(input) {
        check_command(&input[used..]);
    }
});

//! The RESP decoders and encoder: round trips, partial input, limits and malformed input.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::*;

fn words(words: &[&str]) -> Command {
    words.iter().map(|word| word.as_bytes().to_vec()).collect()
}

fn sample() -> Frame {
    Frame::Array(vec![
        Frame::simple("OK"),
        Frame::error("ERR nope"),
        Frame::Integer(-42),
        Frame::bulk("a\r\nb"),
        Frame::bulk(""),
        Frame::NullBulk,
        Frame::Array(vec![Frame::Integer(1), Frame::Array(Vec::new())]),
        Frame::NullArray,
    ])
}

#[test]
fn every_frame_type_survives_encoding_and_decoding() {
    let bytes = sample().to_bytes();
    assert_eq!(decode(&bytes), Ok(Some((sample(), bytes.len()))));
}

#[test]
fn a_frame_cut_anywhere_asks_for_more_bytes_until_it_is_whole() {
    let bytes = sample().to_bytes();
    for end in 0..bytes.len() {
        assert_eq!(decode(&bytes[..end]), Ok(None), "cut at {end}");
    }
    let command = b"*2\r\n$3\r\nGET\r\n$4\r\nlock\r\n";
    for end in 0..command.len() {
        assert_eq!(decode_command(&command[..end]), Ok(None), "cut at {end}");
    }
}

#[test]
fn pipelined_commands_decode_one_at_a_time() {
    let mut bytes = b"*1\r\n$4\r\nPING\r\n".to_vec();
    bytes.extend_from_slice(b"ECHO hi\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    let (first, used) = decode_command(&bytes).unwrap().unwrap();
    assert_eq!((first, used), (words(&["PING"]), 14));
    let (second, more) = decode_command(&bytes[used..]).unwrap().unwrap();
    assert_eq!((second, more), (words(&["ECHO", "hi"]), 9));
    let (third, _) = decode_command(&bytes[used + more..]).unwrap().unwrap();
    assert_eq!(third, words(&["GET", "k"]));
}

#[test]
fn empty_commands_decode_as_no_words() {
    for empty in [&b"\r\n"[..], b"   \n", b"*0\r\n", b"*-1\r\n"] {
        assert_eq!(
            decode_command(empty),
            Ok(Some((Vec::new(), empty.len()))),
            "{empty:?}"
        );
    }
}

#[test]
fn inline_commands_split_with_redis_quoting() {
    let decoded = |line: &[u8]| decode_command(line).map(|found| found.map(|(words, _)| words));
    assert_eq!(
        decoded(b"SET  k \"a b\\n\\x41\" 'it\\'s'\n"),
        Ok(Some(vec![
            b"SET".to_vec(),
            b"k".to_vec(),
            b"a b\nA".to_vec(),
            b"it's".to_vec()
        ]))
    );
    assert_eq!(
        decoded(b"a\"b c\"d e\r\n"),
        Err(RespError::UnbalancedQuotes)
    );
    assert_eq!(
        decoded(b"ab\"c d\" e\r\n"),
        Ok(Some(words(&["abc d", "e"])))
    );
    assert_eq!(
        decoded(b"PING \"open\r\n"),
        Err(RespError::UnbalancedQuotes)
    );
    assert_eq!(decoded(b"PING 'x'y\r\n"), Err(RespError::UnbalancedQuotes));
    assert_eq!(decoded(b"PING \"unfinished"), Ok(None));
}

#[test]
fn malformed_input_is_an_error_that_says_what_was_wrong() {
    let cases: &[(&[u8], RespError)] = &[
        (b"?\r\n", RespError::UnknownType(b'?')),
        (b"*1\r\n:1\r\n", RespError::NotBulk(b':')),
        (
            b"$-2\r\n",
            RespError::InvalidNumber {
                what: "bulk length",
                text: "-2".to_owned(),
            },
        ),
        (
            b"*x\r\n",
            RespError::InvalidNumber {
                what: "array length",
                text: "x".to_owned(),
            },
        ),
        (
            b":99999999999999999999\r\n",
            RespError::InvalidNumber {
                what: "integer",
                text: "99999999999999999999".to_owned(),
            },
        ),
        (b"$2\r\nabcd\r\n", RespError::MissingCrlf),
    ];
    for (bytes, expected) in cases {
        let found = decode(bytes).err().or_else(|| decode_command(bytes).err());
        assert_eq!(found.as_ref(), Some(expected), "{bytes:?}");
    }
    assert_eq!(
        RespError::NotBulk(1).to_string(),
        "expected '$' (a bulk string) in a command, got 0x01"
    );
    assert_eq!(
        RespError::UnknownType(b' ').to_string(),
        "expected a frame type (one of + - : $ *), got ' '"
    );
}

#[test]
fn an_inline_command_may_be_exactly_as_long_as_the_longest_line() {
    let longest = format!("ECHO {}\r\n", "x".repeat(MAX_LINE_LEN - 6));
    assert_eq!(longest.find('\n'), Some(MAX_LINE_LEN));
    let Ok(Some((command, used))) = decode_command(longest.as_bytes()) else {
        panic!("the longest line was refused");
    };
    assert_eq!((command.len(), used), (2, longest.len()));
    let longer = format!("ECHO {}\r\n", "x".repeat(MAX_LINE_LEN - 5));
    assert_eq!(
        decode_command(longer.as_bytes()),
        Err(RespError::LineTooLong)
    );
}

#[test]
fn a_bulk_string_of_four_mebibytes_is_taken_whole() {
    let value = vec![b'x'; 4 * 1024 * 1024];
    let frame = Frame::Array(vec![
        Frame::bulk("SET"),
        Frame::bulk("k"),
        Frame::bulk(&value),
    ]);
    let bytes = frame.to_bytes();
    assert_eq!(decode(&bytes), Ok(Some((frame, bytes.len()))));
}

#[test]
fn declared_lengths_beyond_the_limits_are_refused_before_any_data_arrives() {
    let huge_bulk = format!("${}\r\n", MAX_BULK_LEN + 1);
    assert!(matches!(
        decode(huge_bulk.as_bytes()),
        Err(RespError::BulkTooLong(_))
    ));
    let huge_array = format!("*{}\r\n", MAX_ARRAY_LEN + 1);
    assert!(matches!(
        decode_command(huge_array.as_bytes()),
        Err(RespError::ArrayTooLong(_))
    ));
    // Within the limits, a declaration alone allocates nothing and waits for data.
    let declared = format!("*{MAX_ARRAY_LEN}\r\n");
    assert_eq!(decode(declared.as_bytes()), Ok(None));
    let nested = "*1\r\n".repeat(MAX_DEPTH + 1);
    assert_eq!(decode(nested.as_bytes()), Err(RespError::TooDeep));
}

#[test]
fn a_line_without_an_end_is_refused_once_it_passes_the_limit() {
    let endless = vec![b'a'; MAX_LINE_LEN + 2];
    assert_eq!(decode_command(&endless), Err(RespError::LineTooLong));
    let mut status = vec![b'+'];
    status.extend(vec![b'x'; MAX_LINE_LEN + 2]);
    assert_eq!(decode(&status), Err(RespError::LineTooLong));
    assert_eq!(decode_command(&endless[..MAX_LINE_LEN]), Ok(None));
}

#[test]
fn errors_and_statuses_never_break_the_line_they_are_sent_on() {
    assert_eq!(Frame::error("ERR a\r\nb").to_bytes(), b"-ERR a  b\r\n");
}

#[test]
fn random_bytes_never_make_the_decoders_panic() {
    let mut rng = StdRng::seed_from_u64(7);
    let alphabet = b"*$:+-\r\n0123456789-abc \"'\\x";
    for _ in 0..20_000 {
        let len = rng.random_range(0..40);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if rng.random_bool(0.9) {
                    alphabet[rng.random_range(0..alphabet.len())]
                } else {
                    rng.random()
                }
            })
            .collect();
        if let Ok(Some((_, used))) = decode(&bytes) {
            assert!(used <= bytes.len());
        }
        if let Ok(Some((_, used))) = decode_command(&bytes) {
            assert!(used > 0 && used <= bytes.len());
        }
    }
}

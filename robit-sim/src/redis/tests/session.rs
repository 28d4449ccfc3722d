//! A connection's own commands against a real redis-server: the same sequences on a
//! fresh connection to each, the same replies. (The data commands are compared by the
//! differential test, which has no connection of its own to the simulated server.)
//!
//! Compared exactly, except the connection's id (CLIENT ID, HELLO's `id`) and HELLO's
//! `version`, which name the server rather than describe its behaviour. Left out: the
//! forms the simulated Redis refuses by design, each answered with an error that says
//! so — RESP3, pattern subscriptions, databases other than 0 — and CLIENT SETINFO,
//! which Redis 7.2 added and the server the tests start may predate.

use std::io::{Read, Write};
use std::net::TcpStream;

use robit_test_support::redis::RedisServer;

use super::at;
use crate::redis::resp::{Frame, decode};
use crate::redis::session::{Next, Session};
use crate::redis::{Peer, RedisState};

/// Sequences, each on a fresh connection.
const SEQUENCES: &[&[&[&str]]] = &[
    &[
        &["PING"],
        &["PING", "hi"],
        &["PING", "a", "b"],
        &["ECHO", "x"],
    ],
    &[
        &["AUTH"],
        &["AUTH", "password"],
        &["AUTH", "default", "anything"],
        &["AUTH", "someone", "password"],
        &["AUTH", "a", "b", "c"],
    ],
    &[
        &["HELLO"],
        &["HELLO", "2"],
        &["HELLO", "x"],
        &["HELLO", "4"],
        &["HELLO", "2", "SETNAME", "me"],
        &["CLIENT", "GETNAME"],
        &["HELLO", "2", "AUTH", "default", "x", "SETNAME", "other"],
        &["CLIENT", "GETNAME"],
        &["HELLO", "2", "AUTH", "nobody", "x"],
        &["HELLO", "2", "BOGUS"],
        &["HELLO", "2", "SETNAME"],
        &["HELLO", "2", "AUTH", "default"],
        &["HELLO", "2", "SETNAME", "a b"],
    ],
    &[
        &["CLIENT", "GETNAME"],
        &["CLIENT", "SETNAME", "me"],
        &["CLIENT", "GETNAME"],
        &["CLIENT", "SETNAME", "a b"],
        &["CLIENT", "GETNAME"],
        &["CLIENT", "SETNAME", ""],
        &["CLIENT", "GETNAME"],
        &["CLIENT", "SETNAME"],
        &["CLIENT", "ID"],
        &["CLIENT", "ID", "extra"],
        &["CLIENT", "NOSUCH"],
        &["CLIENT"],
    ],
    &[
        &["SELECT", "0"],
        &["SELECT", "x"],
        &["SELECT", "99"],
        &["SELECT", "-1"],
        &["SELECT"],
    ],
    &[
        &["SUBSCRIBE", "a", "b", "a"],
        &["PING"],
        &["PING", "hi"],
        &["PING", "a", "b"],
        &["GET", "x"],
        &["UNSUBSCRIBE", "a"],
        &["UNSUBSCRIBE"],
        &["UNSUBSCRIBE"],
        &["PING"],
        &["SUBSCRIBE"],
        &["SUBSCRIBE", "c"],
        &["RESET"],
        &["PING"],
        &["CLIENT", "SETNAME", "me"],
        &["RESET"],
        &["CLIENT", "GETNAME"],
    ],
    &[&["QUIT"]],
];

/// A plain RESP connection to the real server.
struct Real {
    stream: TcpStream,
    input: Vec<u8>,
}

impl Real {
    fn send(&mut self, command: &[&str]) {
        let frame = Frame::Array(command.iter().map(Frame::bulk).collect());
        self.stream.write_all(&frame.to_bytes()).unwrap();
    }

    fn reply(&mut self) -> Frame {
        loop {
            if let Some((reply, used)) = decode(&self.input).unwrap() {
                self.input.drain(..used);
                return reply;
            }
            let mut chunk = [0_u8; 4096];
            let read = self.stream.read(&mut chunk).unwrap();
            assert!(read > 0, "redis-server closed the connection");
            self.input.extend_from_slice(&chunk[..read]);
        }
    }
}

/// `frame` with what names the server rather than its behaviour blotted out.
fn normalised(frame: Frame, command: &[&str]) -> Frame {
    let is_id = command.len() == 2 && command[1].eq_ignore_ascii_case("id");
    match frame {
        Frame::Integer(_) if is_id => Frame::bulk("<id>"),
        Frame::Array(mut fields) => {
            for i in 1..fields.len() {
                let blot = match &fields[i - 1] {
                    Frame::Bulk(name) if name == b"id" => "<id>",
                    Frame::Bulk(name) if name == b"version" => "<version>",
                    _ => continue,
                };
                fields[i] = Frame::bulk(blot);
            }
            Frame::Array(fields)
        }
        other => other,
    }
}

/// Replies, readable.
fn text(frames: &[Frame]) -> Vec<String> {
    frames
        .iter()
        .map(|frame| String::from_utf8_lossy(&frame.to_bytes()).into_owned())
        .collect()
}

#[test]
fn a_connection_s_own_commands_are_answered_as_redis_server_answers_them() {
    let server = RedisServer::start();
    let state = RedisState::new();
    let peer = Peer::new("10.0.0.2:5000".parse().unwrap(), None);
    let mut compared = 0;
    for sequence in SEQUENCES {
        let mut real = Real {
            stream: TcpStream::connect(("127.0.0.1", server.port())).unwrap(),
            input: Vec::new(),
        };
        let (mut session, _pushes) = Session::new(state.clone(), peer.clone());
        for (step, command) in sequence.iter().enumerate() {
            let words: Vec<Vec<u8>> = command.iter().map(|w| w.as_bytes().to_vec()).collect();
            let mut sim = Vec::new();
            let next = session.handle(at(0), &words, &mut sim);
            real.send(command);
            // As many replies as the simulated server gave; one more from the real one
            // shows up as a difference at the next command.
            let real_replies: Vec<Frame> = (0..sim.len().max(1)).map(|_| real.reply()).collect();
            let sim: Vec<Frame> = sim.into_iter().map(|f| normalised(f, command)).collect();
            let real_replies: Vec<Frame> = real_replies
                .into_iter()
                .map(|f| normalised(f, command))
                .collect();
            assert_eq!(
                text(&sim),
                text(&real_replies),
                "the simulated Redis answered {command:?} (step {step} of {sequence:?}) \
                 unlike redis-server"
            );
            compared += 1;
            if next == Next::Close {
                let mut rest = [0_u8; 1];
                assert_eq!(
                    real.stream.read(&mut rest).unwrap(),
                    0,
                    "redis-server kept the connection open after {command:?}"
                );
                break;
            }
        }
    }
    let all: usize = SEQUENCES.iter().map(|sequence| sequence.len()).sum();
    assert_eq!(compared, all, "not every command was compared");
}

#[test]
fn info_names_a_new_server_identity_in_every_life_as_robit_identity_predicts() {
    let state = RedisState::new();
    let peer = Peer::new("10.0.0.1:40000".parse().unwrap(), None);
    let info = |state: &RedisState| {
        let (mut session, _pushes) = Session::new(state.clone(), peer.clone());
        let mut replies = Vec::new();
        let command = ["INFO", "server", "replication"].map(|w| w.as_bytes().to_vec());
        session.handle(at(0), &command, &mut replies);
        match replies.as_slice() {
            [Frame::Bulk(text)] => String::from_utf8(text.clone()).unwrap(),
            other => panic!("INFO answered {other:?}"),
        }
    };
    let identity = |text: &str| {
        let field = |name: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
                .unwrap()
                .trim()
                .to_owned()
        };
        let (run, replication) = (field("run_id"), field("master_replid"));
        assert_eq!((run.len(), replication.len()), (40, 40), "{text}");
        format!("/{}{}", &run[..16], &replication[..16])
    };
    state.lock().begin_life();
    let first = identity(&info(&state));
    assert_eq!(first, RedisState::robit_identity(1));
    state.lock().begin_life();
    let second = identity(&info(&state));
    assert_eq!(second, RedisState::robit_identity(2));
    assert_ne!(first, second);
    // Only the sections asked for.
    let (mut session, _pushes) = Session::new(state.clone(), peer.clone());
    let mut replies = Vec::new();
    session.handle(at(0), &[b"INFO".to_vec(), b"server".to_vec()], &mut replies);
    let Frame::Bulk(text) = &replies[0] else {
        panic!("{replies:?}")
    };
    let text = String::from_utf8_lossy(text);
    assert!(
        text.contains("run_id:") && !text.contains("master_replid"),
        "{text}"
    );
}

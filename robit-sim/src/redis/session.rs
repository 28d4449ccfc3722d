//! One client connection: its subscriptions, its name, and the commands that concern the
//! connection rather than the data (HELLO, AUTH, SELECT, CLIENT, QUIT, RESET, SUBSCRIBE,
//! UNSUBSCRIBE, and PING in subscribe mode), with Redis 7's RESP2 replies.
//!
//! There are no passwords: the default user accepts any, as a Redis without
//! `requirepass` does. There is one database, 0.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::commands::{Command, VERSION, check};
use super::events::Peer;
use super::exec::{SYNTAX, integer, wrong_arity};
use super::resp::Frame;
use super::state::RedisState;

/// Whether a connection may send `command` while subscribed (RESP2).
fn allowed_while_subscribed(command: Command) -> bool {
    matches!(
        command,
        Command::Subscribe
            | Command::Psubscribe
            | Command::Unsubscribe
            | Command::Punsubscribe
            | Command::Ping
            | Command::Quit
            | Command::Reset
    )
}

/// What the connection does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Continue,
    Close,
}

/// A connection's state. Dropping it (the connection closed, or its host crashed)
/// removes its subscriptions.
pub(crate) struct Session {
    id: u64,
    state: RedisState,
    peer: Peer,
    subscribed: BTreeSet<Vec<u8>>,
    pushes: UnboundedSender<Frame>,
    name: Option<Vec<u8>>,
}

impl Session {
    /// A session for `peer`, and the receiver of the messages published to it.
    pub(crate) fn new(state: RedisState, peer: Peer) -> (Self, UnboundedReceiver<Frame>) {
        let (pushes, received) = unbounded_channel();
        let id = state.lock().connection_id();
        let session = Self {
            id,
            state,
            peer,
            subscribed: BTreeSet::new(),
            pushes,
            name: None,
        };
        (session, received)
    }

    /// Runs one command at the backend's local time `now`, appending its replies (a
    /// SUBSCRIBE of several channels has several).
    pub(crate) fn handle(
        &mut self,
        now: Duration,
        args: &[Vec<u8>],
        replies: &mut Vec<Frame>,
    ) -> Next {
        let command = match check(args) {
            Ok(command) => command,
            Err(error) => {
                replies.push(error);
                return Next::Continue;
            }
        };
        if !self.subscribed.is_empty() && !allowed_while_subscribed(command) {
            replies.push(Frame::error(format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / \
                 QUIT / RESET are allowed in this context",
                command.name()
            )));
            return Next::Continue;
        }
        let reply = match command {
            Command::Subscribe => {
                for channel in &args[1..] {
                    self.subscribe(channel, replies);
                }
                return Next::Continue;
            }
            Command::Unsubscribe => {
                self.unsubscribe(&args[1..], replies);
                return Next::Continue;
            }
            Command::Psubscribe | Command::Punsubscribe => {
                Frame::error("ERR the simulated Redis does not support pattern subscriptions")
            }
            Command::Ping if !self.subscribed.is_empty() => match args {
                [_] => Frame::Array(vec![Frame::bulk("pong"), Frame::bulk("")]),
                [_, message] => Frame::Array(vec![Frame::bulk("pong"), Frame::bulk(message)]),
                _ => wrong_arity("ping"),
            },
            Command::Quit => {
                replies.push(Frame::ok());
                return Next::Close;
            }
            Command::Reset => {
                self.unsubscribe(&[], &mut Vec::new());
                self.name = None;
                Frame::simple("RESET")
            }
            Command::Hello => self.hello(args),
            Command::Auth => auth(&args[1..]),
            Command::Select => select(&args[1]),
            Command::Client => self.client(args),
            Command::Info => self.state.lock().info(&args[1..]),
            _ => self.state.lock().run(&self.peer, now, command, args),
        };
        replies.push(reply);
        Next::Continue
    }

    fn subscribe(&mut self, channel: &[u8], replies: &mut Vec<Frame>) {
        if self.subscribed.insert(channel.to_vec()) {
            self.state
                .lock()
                .channels
                .subscribe(channel, self.id, self.pushes.clone());
        }
        replies.push(self.confirmation("subscribe", Some(channel)));
    }

    /// UNSUBSCRIBE from `channels`, or from every channel if none is named.
    fn unsubscribe(&mut self, channels: &[Vec<u8>], replies: &mut Vec<Frame>) {
        let channels: Vec<Vec<u8>> = if channels.is_empty() {
            self.subscribed.iter().cloned().collect()
        } else {
            channels.to_vec()
        };
        if channels.is_empty() {
            replies.push(self.confirmation("unsubscribe", None));
        }
        for channel in channels {
            self.subscribed.remove(&channel);
            self.state.lock().channels.unsubscribe(&channel, self.id);
            replies.push(self.confirmation("unsubscribe", Some(&channel)));
        }
    }

    /// `[kind, channel, subscriptions left]`.
    fn confirmation(&self, kind: &str, channel: Option<&[u8]>) -> Frame {
        Frame::Array(vec![
            Frame::bulk(kind),
            channel.map_or(Frame::NullBulk, Frame::bulk),
            Frame::Integer(i64::try_from(self.subscribed.len()).unwrap_or(i64::MAX)),
        ])
    }

    /// HELLO [protover [AUTH username password] [SETNAME clientname]]: RESP2 only.
    fn hello(&mut self, args: &[Vec<u8>]) -> Frame {
        if let Some(version) = args.get(1) {
            match integer(version) {
                Err(_) => {
                    return Frame::error("ERR Protocol version is not an integer or out of range");
                }
                Ok(2) => {}
                Ok(3) => return Frame::error("NOPROTO the simulated Redis speaks RESP2 only"),
                Ok(_) => return Frame::error("NOPROTO unsupported protocol version"),
            }
        }
        let (mut credentials, mut name) = (None, None);
        let mut i = 2;
        while let Some(option) = args.get(i) {
            let more = args.len() - 1 - i;
            if option.eq_ignore_ascii_case(b"auth") && more >= 2 {
                credentials = Some(&args[i + 1..i + 3]);
                i += 3;
            } else if option.eq_ignore_ascii_case(b"setname") && more >= 1 {
                name = Some(&args[i + 1]);
                i += 2;
            } else {
                let mut message = b"ERR Syntax error in HELLO option '".to_vec();
                message.extend_from_slice(option);
                message.push(b'\'');
                return Frame::Error(message);
            }
        }
        if let Some(credentials) = credentials {
            let reply = auth(credentials);
            if reply != Frame::ok() {
                return reply;
            }
        }
        if let Some(name) = name {
            let reply = self.set_name(name);
            if reply != Frame::ok() {
                return reply;
            }
        }
        let field = |text: &str| Frame::bulk(text);
        Frame::Array(vec![
            field("server"),
            field("redis"),
            field("version"),
            field(VERSION),
            field("proto"),
            Frame::Integer(2),
            field("id"),
            Frame::Integer(i64::try_from(self.id).unwrap_or(i64::MAX)),
            field("mode"),
            field("standalone"),
            field("role"),
            field("master"),
            field("modules"),
            Frame::Array(Vec::new()),
        ])
    }

    /// CLIENT SETINFO / SETNAME / GETNAME / ID (the subcommand and arity are checked).
    fn client(&mut self, args: &[Vec<u8>]) -> Frame {
        match args[1].to_ascii_lowercase().as_slice() {
            b"setinfo" => {
                let attribute = args[2].to_ascii_lowercase();
                if attribute == b"lib-name" || attribute == b"lib-ver" {
                    Frame::ok()
                } else {
                    let mut message = b"ERR Unrecognized option '".to_vec();
                    message.extend_from_slice(&args[2]);
                    message.push(b'\'');
                    Frame::Error(message)
                }
            }
            b"setname" => self.set_name(&args[2]),
            b"getname" => self.name.as_ref().map_or(Frame::NullBulk, Frame::bulk),
            b"id" => Frame::Integer(i64::try_from(self.id).unwrap_or(i64::MAX)),
            _ => Frame::error("ERR unknown subcommand"),
        }
    }

    fn set_name(&mut self, name: &[u8]) -> Frame {
        if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
            return Frame::error(
                "ERR Client names cannot contain spaces, newlines or special characters.",
            );
        }
        self.name = (!name.is_empty()).then(|| name.to_vec());
        Frame::ok()
    }
}

/// AUTH [username] password, against a server without passwords.
fn auth(args: &[Vec<u8>]) -> Frame {
    match args {
        [_password] => Frame::error(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        ),
        [user, _password] if user.as_slice() == b"default" => Frame::ok(),
        [_, _] => Frame::error("WRONGPASS invalid username-password pair or user is disabled."),
        _ => Frame::error(SYNTAX),
    }
}

/// SELECT index: only database 0 exists here.
fn select(index: &[u8]) -> Frame {
    match integer(index)
        .ok()
        .and_then(|index| i32::try_from(index).ok())
    {
        None => Frame::error(super::store::NOT_AN_INTEGER),
        Some(0) => Frame::ok(),
        Some(1..=15) => Frame::error("ERR the simulated Redis has only database 0"),
        Some(_) => Frame::error("ERR DB index is out of range"),
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let mut state = self.state.lock();
        for channel in &self.subscribed {
            state.channels.unsubscribe(channel, self.id);
        }
    }
}

//! The simulated Redis server: serves a [`RedisState`] over the simulated network.

use std::net::{Ipv4Addr, SocketAddr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil::net::{TcpListener, TcpStream};

use super::events::Peer;
use super::resp::{Frame, decode_command};
use super::session::{Next, Session};
use super::state::RedisState;
use crate::SimClock;

/// The port Redis listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 6379;

/// A Redis server inside a turmoil simulation, for robit's real Redis driver to talk to.
///
/// Run it as a host's software. Each connection gets its own task: commands are read as
/// they arrive (pipelined or not), each runs at the host's local clock reading
/// ([`SimClock::local_elapsed`]), and replies go back in order; a subscribed connection
/// also receives what is published. When the host crashes, turmoil drops these tasks and
/// their connections; the [`RedisState`] lives on outside the host, to be served again
/// after a restart, or [wiped](RedisState::wipe) first for a restart that loses data.
///
/// # Example
///
/// ```no_run
/// use robit_sim::SimClock;
/// use robit_sim::redis::{DEFAULT_PORT, RedisState, SimRedis};
///
/// let state = RedisState::new();
/// let clock = SimClock::new();
/// let mut sim = turmoil::Builder::new().build();
/// sim.host("redis", move || {
///     let server = SimRedis::new(state.clone(), clock.clone());
///     async move { Ok(server.serve(DEFAULT_PORT).await?) }
/// });
/// ```
#[derive(Debug, Clone)]
pub struct SimRedis {
    state: RedisState,
    clock: SimClock,
}

impl SimRedis {
    /// A server for `state`, reading time from the backend host's `clock`.
    pub fn new(state: RedisState, clock: SimClock) -> Self {
        Self { state, clock }
    }

    /// Listens on `port` of the host's IPv4 address and serves until the host stops.
    ///
    /// # Errors
    ///
    /// If the port cannot be bound, or the listener fails.
    pub async fn serve(self, port: u16) -> std::io::Result<()> {
        self.serve_at(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)))
            .await
    }

    /// Listens on `addr` (an unspecified address and a port, such as `[::]:6379` in a
    /// simulation that uses IPv6) and serves until the host stops.
    ///
    /// # Errors
    ///
    /// If the address cannot be bound, or the listener fails.
    pub async fn serve_at(self, addr: SocketAddr) -> std::io::Result<()> {
        let listener = TcpListener::bind(addr).await?;
        self.state.lock().begin_life();
        loop {
            let (stream, peer) = listener.accept().await?;
            let (state, clock) = (self.state.clone(), self.clock.clone());
            tokio::spawn(connection(state, clock, stream, peer));
        }
    }
}

/// Serves one connection until the client closes it, sends QUIT or garbage, or the
/// host goes down.
async fn connection(state: RedisState, clock: SimClock, mut stream: TcpStream, addr: SocketAddr) {
    let peer = Peer::new(addr, turmoil::reverse_lookup(addr.ip()));
    let (mut session, mut pushes) = Session::new(state, peer);
    let mut input = Vec::new();
    let mut chunk = vec![0_u8; 16 * 1024];
    loop {
        let mut output = Vec::new();
        tokio::select! {
            read = stream.read(&mut chunk) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => input.extend_from_slice(&chunk[..n]),
            },
            Some(push) = pushes.recv() => push.encode(&mut output),
        }
        // What was published before these commands ran goes out first, as in Redis.
        while let Ok(push) = pushes.try_recv() {
            push.encode(&mut output);
        }
        let next = run_commands(&mut session, &clock, &mut input, &mut output);
        if !output.is_empty() && stream.write_all(&output).await.is_err() {
            return;
        }
        if next == Next::Close {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// Runs every whole command in `input` (removing them), encoding the replies into
/// `output`. Malformed input gets one protocol error, and the connection closes.
fn run_commands(
    session: &mut Session,
    clock: &SimClock,
    input: &mut Vec<u8>,
    output: &mut Vec<u8>,
) -> Next {
    let mut used = 0;
    let mut next = Next::Continue;
    let mut replies = Vec::new();
    while next == Next::Continue {
        match decode_command(&input[used..]) {
            Ok(None) => break,
            Ok(Some((words, size))) => {
                used += size;
                if !words.is_empty() {
                    next = session.handle(clock.local_elapsed(), &words, &mut replies);
                }
            }
            Err(error) => {
                replies.push(Frame::error(format!("ERR Protocol error: {error}")));
                next = Next::Close;
            }
        }
    }
    input.drain(..used);
    for reply in replies {
        reply.encode(output);
    }
    next
}

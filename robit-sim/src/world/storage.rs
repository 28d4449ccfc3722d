//! The storage host: the resource the lock protects. With fencing on it rejects writes
//! whose token is below the highest it has accepted, through robit's [`FenceGate`].

use std::sync::Arc;
use std::time::Duration;

use robit::{FenceGate, FenceToken};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use turmoil::net::{TcpListener, TcpStream};

use robit::sources::Clock;

use crate::{EventKind, History, SimClock};

pub(crate) const HOST: &str = "storage";
pub(crate) const PORT: u16 = 7000;

/// Accepts `WRITE <token>` lines until the host stops.
pub(crate) async fn serve(
    history: History,
    gate: Arc<FenceGate>,
    fencing: bool,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(("0.0.0.0", PORT)).await?;
    loop {
        let (stream, peer) = listener.accept().await?;
        let from = turmoil::reverse_lookup(peer.ip()).unwrap_or_else(|| peer.ip().to_string());
        let (history, gate) = (history.clone(), Arc::clone(&gate));
        tokio::task::spawn_local(async move {
            let (read, mut write) = stream.into_split();
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Some(token) = line
                    .strip_prefix("WRITE ")
                    .and_then(|t| t.parse::<u64>().ok())
                else {
                    break;
                };
                let verdict = if fencing {
                    gate.check(FenceToken::new(token))
                } else {
                    Ok(())
                };
                let reply = match verdict {
                    Ok(()) => {
                        history.record(
                            HOST,
                            EventKind::WriteAccepted {
                                from: from.clone(),
                                token,
                            },
                        );
                        "OK\n"
                    }
                    Err(stale) => {
                        history.record(
                            HOST,
                            EventKind::WriteRejected {
                                from: from.clone(),
                                token,
                                highest: stale.highest.get(),
                            },
                        );
                        "STALE\n"
                    }
                };
                if write.write_all(reply.as_bytes()).await.is_err() {
                    break;
                }
            }
        });
    }
}

/// Sends one fenced write; a write that times out or fails is simply lost. The timeout
/// runs on the client's own clock, so a paused client does not give up mid-pause.
pub(crate) async fn write(token: u64, timeout: Duration, clock: &SimClock) {
    let exchange = async {
        let stream = TcpStream::connect((HOST, PORT)).await?;
        let (read, mut write) = stream.into_split();
        write
            .write_all(format!("WRITE {token}\n").as_bytes())
            .await?;
        let mut reply = String::new();
        BufReader::new(read).read_line(&mut reply).await?;
        Ok::<_, std::io::Error>(())
    };
    let deadline = clock.now() + timeout;
    tokio::select! {
        biased;
        _ = exchange => {}
        () = clock.sleep_until(deadline) => {}
    }
}

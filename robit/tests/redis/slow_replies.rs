//! A TCP proxy in front of a Redis server whose replies can be held back, so that a test
//! can tell a rule counted from a request's send from one counted from its answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// Forwards every connection to its server; requests go through at once, and each reply
/// reaches the client [`set_reply_delay`](Self::set_reply_delay) after the server sent
/// it: the server acts on a request when it is sent, and the client learns of it later.
#[derive(Debug)]
pub(crate) struct SlowReplies {
    port: u16,
    delay_ms: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl SlowReplies {
    /// A proxy on a free loopback port, forwarding to `upstream_port`, with no delay yet.
    pub(crate) async fn start(upstream_port: u16) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let delay_ms = Arc::new(AtomicU64::new(0));
        let delays = Arc::clone(&delay_ms);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream_port)).await else {
                    continue;
                };
                let delay = Arc::clone(&delays);
                tokio::spawn(async move {
                    let (mut client_read, client_write) = client.into_split();
                    let (server_read, mut server_write) = server.into_split();
                    let up = tokio::io::copy(&mut client_read, &mut server_write);
                    let down = forward_late(server_read, client_write, delay);
                    let _ = tokio::join!(up, down);
                });
            }
        });
        Self {
            port,
            delay_ms,
            task,
        }
    }

    /// The URL that reaches the server through this proxy.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// From now on, on every connection, each reply reaches the client `delay` after the
    /// server sent it. Replies keep their order; delays do not add up.
    pub(crate) fn set_reply_delay(&self, delay: Duration) {
        let millis = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.delay_ms.store(millis, Ordering::SeqCst);
    }
}

impl Drop for SlowReplies {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Forwards what `from` reads to `to`, each chunk `delay_ms` after it was read: a reader
/// stamps each chunk with when it is due and queues it, a writer sends it then.
async fn forward_late(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay_ms: Arc<AtomicU64>) {
    let (queue, mut due) = tokio::sync::mpsc::unbounded_channel();
    let reading = async move {
        let mut buffer = [0_u8; 16 * 1024];
        loop {
            let read = match from.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(read) => read,
            };
            let delay = Duration::from_millis(delay_ms.load(Ordering::SeqCst));
            if queue
                .send((tokio::time::Instant::now() + delay, buffer[..read].to_vec()))
                .is_err()
            {
                return;
            }
        }
    };
    let writing = async move {
        while let Some((at, bytes)) = due.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
    };
    tokio::join!(reading, writing);
}

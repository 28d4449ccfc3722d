//! A TCP proxy a test owns, between a client and its server, to freeze a link.

/// A TCP proxy in front of a server that can freeze its existing connections — keep them
/// open but stop forwarding, like a half-open connection after a network failure — while
/// still serving new ones; or freeze the link itself, new connections included.
#[derive(Debug)]
pub struct FreezingProxy {
    port: u16,
    epoch: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The link is frozen: connections accepted now are born frozen.
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl FreezingProxy {
    /// A proxy on a free loopback port, forwarding to `upstream_port`.
    pub async fn start(upstream_port: u16) -> Self {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let epoch = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (shared, link_cut) = (std::sync::Arc::clone(&epoch), std::sync::Arc::clone(&cut));
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream_port)).await
                else {
                    continue;
                };
                let born = if link_cut.load(Ordering::SeqCst) {
                    u64::MAX
                } else {
                    shared.load(Ordering::SeqCst)
                };
                let epoch = std::sync::Arc::clone(&shared);
                tokio::spawn(async move {
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    let live = move || epoch.load(Ordering::SeqCst) == born;
                    let live_too = live.clone();
                    let up = forward(&mut client_read, &mut server_write, live);
                    let down = forward(&mut server_read, &mut client_write, live_too);
                    tokio::join!(up, down);
                });
            }
        });
        Self {
            port,
            epoch,
            cut,
            task,
        }
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL that reaches the server through this proxy.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// From now on, connections opened before this call forward nothing (and never close).
    pub fn freeze_existing(&self) {
        self.epoch.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Freezes the link: connections open now forward nothing, and so do those opened
    /// until [`thaw`](Self::thaw), as a network partition does to a client that
    /// reconnects.
    pub fn freeze(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
        self.freeze_existing();
    }

    /// Ends [`freeze`](Self::freeze) for connections opened from now on.
    pub fn thaw(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for FreezingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn forward(
    from: &mut tokio::net::tcp::OwnedReadHalf,
    to: &mut tokio::net::tcp::OwnedWriteHalf,
    live: impl Fn() -> bool,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buffer = [0_u8; 16 * 1024];
    loop {
        let Ok(read) = from.read(&mut buffer).await else {
            return;
        };
        if read == 0 {
            return;
        }
        if !live() {
            // Frozen: swallow everything, keep the socket open.
            std::future::pending::<()>().await;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

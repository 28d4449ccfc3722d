//! A primary and a replica of the test's own, the replication link through a proxy the
//! test can freeze: the lagging replica of a failover that loses writes.

use std::time::Duration;

use super::{FreezingProxy, RedisServer};

/// A primary, and a replica that replicates it through a [`FreezingProxy`].
#[derive(Debug)]
pub struct ReplicatedPair {
    /// The primary, until [`fail_over`](Self::fail_over).
    pub primary: RedisServer,
    /// The replica; the primary after [`fail_over`](Self::fail_over).
    pub replica: RedisServer,
    link: FreezingProxy,
}

impl ReplicatedPair {
    /// Starts both, and waits until the replica is in sync.
    pub async fn start() -> Self {
        // A replica's first sync at once, not after the default 5 s wait for others.
        let primary = RedisServer::start_with(&["--repl-diskless-sync-delay", "0"]);
        let link = FreezingProxy::start(primary.port()).await;
        let replica = RedisServer::start_with(&[
            "--replicaof",
            "127.0.0.1",
            &link.port().to_string(),
            "--repl-timeout",
            "60",
        ]);
        let pair = Self {
            primary,
            replica,
            link,
        };
        pair.wait_in_sync().await;
        pair
    }

    /// Waits until the replica has everything the primary wrote so far. Readiness
    /// polling, not a timing assertion.
    pub async fn wait_in_sync(&self) {
        let mut primary = self.primary.admin().await;
        let mut replica = self.replica.admin().await;
        for _ in 0..1_000 {
            let written = offset(&mut primary, "master_repl_offset").await;
            let replicated = offset(&mut replica, "slave_repl_offset").await;
            if written.is_some() && written == replicated {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the replica did not catch up:\n{}", self.replica.log());
    }

    /// Freezes the replication link: from now on the replica receives nothing, and lags.
    pub fn freeze_replication(&self) {
        self.link.freeze_existing();
    }

    /// Fails over: the primary is killed, and the replica promoted (`REPLICAOF NO ONE`),
    /// with whatever it had received.
    pub async fn fail_over(&mut self) {
        tokio::task::block_in_place(|| self.primary.stop());
        let _: () = redis::cmd("REPLICAOF")
            .arg("NO")
            .arg("ONE")
            .query_async(&mut self.replica.admin().await)
            .await
            .expect("REPLICAOF NO ONE");
    }
}

/// A field of `INFO replication`, as a number.
async fn offset(connection: &mut redis::aio::MultiplexedConnection, field: &str) -> Option<u64> {
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query_async(connection)
        .await
        .ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().parse().ok())
}

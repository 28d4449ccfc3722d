//! Every documented behaviour, checked through each Redis topology beyond one server:
//! the driver through Sentinel (`RedisDriver::sentinel`), in cluster mode
//! (`RedisDriver::cluster`), and the quorum driver (`RedlockDriver`) on three and on four
//! servers. One shared set of checks (`robit_test_support::behaviours`): no spurious loss
//! over many renewals (P3), fencing across holds, an expiry and a force release (P4), a
//! late release leaving a later grant alone (P6), the hold cap, a refresh by hand, the
//! lock-delay, force release, the fair hand-off, and jeopardy before a loss when the
//! holder's renewals stop getting through — a paused primary or master, or the holder's
//! links to a majority frozen — with every belief interval checked for overlap.
//!
//! Each test starts its topology once and runs the checks that need no fault at once,
//! each on a lock of its own, then the jeopardy check. Real time throughout.

use std::sync::Mutex as StdMutex;
use std::time::Duration;

use robit::Driver;
use robit::redis::{RedisDriver, RedlockDriver, UrlConnector};
use robit_test_support::behaviours::{self, Fault, Hook, Topology};
use robit_test_support::redis::{FreezingProxy, MASTER_NAME, RedisCluster, RedisServer, Sentinels};

/// A server paused (SIGSTOP) while the fault lasts.
struct Paused<'a>(&'a RedisServer);

impl Fault for Paused<'_> {
    fn cut(&self) -> Hook<'_, ()> {
        Box::pin(async { self.0.pause() })
    }

    fn heal(&self) -> Hook<'_, ()> {
        Box::pin(async { self.0.resume() })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_behaviour_holds_through_sentinel() {
    // Sentinels slow to take the primary for down: the pause below is not a failover.
    let sentinels = Sentinels::start_with_down_after(Duration::from_secs(30)).await;
    let urls = sentinels.urls();
    let topology = Topology::new("sentinel", move || {
        let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
        RedisDriver::sentinel(MASTER_NAME, &urls)
            .command_timeout(Duration::from_millis(250))
            .build()
            .unwrap()
    });
    behaviours::healthy(&topology).await;
    let fault = Paused(&sentinels.pair.primary);
    behaviours::jeopardy_before_loss(&topology, topology.driver(), &fault).await;
}

/// The master serving the jeopardy check's lock, paused while the fault lasts.
struct PausedMaster<'a> {
    cluster: &'a RedisCluster,
    paused: StdMutex<Option<u16>>,
}

impl Fault for PausedMaster<'_> {
    fn cut(&self) -> Hook<'_, ()> {
        Box::pin(async {
            let mut serving = None;
            for port in self.cluster.master_ports().await {
                if !self
                    .cluster
                    .keys_on(port, "*:lock:jeopardy")
                    .await
                    .is_empty()
                {
                    serving = Some(port);
                }
            }
            let port = serving.expect("a master holds the lock");
            self.cluster.node(port).pause();
            *self.paused.lock().unwrap() = Some(port);
        })
    }

    fn heal(&self) -> Hook<'_, ()> {
        Box::pin(async {
            let port = self.paused.lock().unwrap().take().expect("a paused master");
            self.cluster.node(port).resume();
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_behaviour_holds_in_cluster_mode() {
    let cluster = RedisCluster::start(3, 0).await;
    let urls = cluster.urls();
    let topology = Topology::new("cluster", move || {
        let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
        RedisDriver::cluster(&urls)
            .command_timeout(Duration::from_millis(500))
            .build()
            .unwrap()
    });
    behaviours::healthy(&topology).await;
    let fault = PausedMaster {
        cluster: &cluster,
        paused: StdMutex::new(None),
    };
    behaviours::jeopardy_before_loss(&topology, topology.driver(), &fault).await;
}

/// A quorum over `urls`, whose commands time out after 250 ms.
fn quorum(urls: &[String]) -> RedlockDriver {
    let member = |url: &String| {
        RedisDriver::builder(url)
            .command_timeout(Duration::from_millis(250))
            .quarantine(Duration::from_secs(2))
            .build()
            .unwrap()
    };
    RedlockDriver::new(urls.iter().map(member).collect()).unwrap()
}

/// The holder's links to the first `count` servers, frozen while the fault lasts.
struct FrozenLinks<'a>(&'a [FreezingProxy], usize);

impl Fault for FrozenLinks<'_> {
    fn cut(&self) -> Hook<'_, ()> {
        Box::pin(async { self.0[..self.1].iter().for_each(FreezingProxy::freeze) })
    }

    fn heal(&self) -> Hook<'_, ()> {
        Box::pin(async { self.0.iter().for_each(FreezingProxy::thaw) })
    }
}

/// Every behaviour on a quorum of `count` servers; the jeopardy check's holder reaches
/// them through proxies, and loses its links to `count - majority + 1` of them.
async fn every_documented_behaviour_holds_on_a_quorum(count: usize) {
    let servers: Vec<RedisServer> = (0..count).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    let probe: RedlockDriver<UrlConnector> = quorum(&urls);
    let made = urls.clone();
    let topology = Topology::new("quorum", move || quorum(&made)).queued_everywhere(move |name| {
        let probe = probe.clone();
        Box::pin(async move {
            let mut fewest = usize::MAX;
            for server in probe.servers() {
                let waiters = server.inspect(&name).await.map_or(0, |seen| seen.waiters);
                fewest = fewest.min(waiters);
            }
            fewest
        })
    });
    behaviours::healthy(&topology).await;
    let mut proxies = Vec::new();
    for server in &servers {
        proxies.push(FreezingProxy::start(server.port()).await);
    }
    let through: Vec<String> = proxies.iter().map(FreezingProxy::url).collect();
    let cut = count - (count / 2 + 1) + 1;
    let fault = FrozenLinks(&proxies, cut);
    behaviours::jeopardy_before_loss(&topology, std::sync::Arc::new(quorum(&through)), &fault)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_behaviour_holds_on_a_quorum_of_three_servers() {
    every_documented_behaviour_holds_on_a_quorum(3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_behaviour_holds_on_a_quorum_of_four_servers() {
    every_documented_behaviour_holds_on_a_quorum(4).await;
}

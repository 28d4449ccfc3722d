//! A Redis Cluster of the test's own: masters and their replicas, each a [`RedisServer`],
//! joined by `redis-cli --cluster create`. The topology a cluster client runs on, and the
//! changes it must follow: a manual failover, a master's crash and its replica's
//! promotion, a slot moving to another master.
//!
//! Every change waits until every live node agrees on its outcome, polling the nodes' own
//! answers (`CLUSTER INFO`, `CLUSTER NODES`) with a deadline: nothing sleeps for a fixed
//! time and hopes.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use redis::{FromRedisValue, ToRedisArgs};

use super::RedisServer;

/// How long a change may take to reach every node: past it, it never will.
const DEADLINE: Duration = Duration::from_secs(30);

/// What every node starts with, besides cluster mode.
const NODE_ARGS: &[&str] = &[
    // A peer silent for 1 s is failing (the default is 15 s): a killed master's replica
    // takes over within a few seconds.
    "--cluster-node-timeout",
    "1000",
    // A replica may take over however long ago it last heard from its master: with the
    // short timeout above, a slow machine could otherwise leave it too stale to run.
    "--cluster-replica-validity-factor",
    "0",
    // A replica's first sync at once, not after the default 5 s wait for others.
    "--repl-diskless-sync-delay",
    "0",
];

/// A range of slots, first and last included, as `CLUSTER NODES` lists them.
type Range = (u16, u16);

/// Redis Cluster nodes of the test's own — masters, each with its replicas — covering all
/// 16384 slots; every node killed on drop, its log printed if the test is failing.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

/// A node as one line of `CLUSTER NODES` describes it: what the node asked believes.
#[derive(Debug)]
struct Seen {
    id: String,
    port: u16,
    master: bool,
    /// Flagged `fail` or `fail?`: unreachable, as far as the node asked knows.
    failing: bool,
    /// The master it replicates, if it is a replica.
    master_id: Option<String>,
    slots: Vec<Range>,
}

impl RedisCluster {
    /// Starts `masters` masters (at least three, as `redis-cli` demands) with
    /// `replicas_per_master` replicas each, and waits until every node has the cluster ok
    /// and every replica is in sync with its master.
    pub async fn start(masters: usize, replicas_per_master: usize) -> Self {
        assert!(masters >= 3, "redis-cli --cluster create wants 3 masters");
        let nodes = (0..masters * (1 + replicas_per_master))
            .map(|_| RedisServer::start_cluster_node_with(NODE_ARGS))
            .collect();
        let cluster = Self { nodes };
        cluster.create(replicas_per_master);
        let replicas = masters * replicas_per_master;
        wait_until("the cluster to form", || cluster.formed(replicas)).await;
        cluster
    }

    /// Joins the nodes into a cluster, as an operator does: `redis-cli --cluster create`
    /// (`$ROBIT_REDIS_CLI`, or `redis-cli` from `PATH`) spreads the slots over masters and
    /// makes the other nodes their replicas.
    fn create(&self, replicas_per_master: usize) {
        let cli = std::env::var("ROBIT_REDIS_CLI").unwrap_or_else(|_| "redis-cli".to_owned());
        let ports = self.nodes.iter().map(RedisServer::port);
        let replicas = replicas_per_master.to_string();
        let mut command = Command::new(&cli);
        command.args(["--cluster", "create"]);
        command.args(ports.map(|port| format!("127.0.0.1:{port}")));
        command.args(["--cluster-replicas", &replicas, "--cluster-yes"]);
        let output = command.stdin(Stdio::null()).output().unwrap_or_else(|err| {
            panic!("could not run {cli}: {err}; install redis-tools (it has redis-cli) or point ROBIT_REDIS_CLI at one")
        });
        let (out, err) = (&output.stdout, &output.stderr);
        let said = String::from_utf8_lossy(out) + String::from_utf8_lossy(err);
        let status = output.status;
        assert!(status.success(), "redis-cli failed: {status}\n{said}");
    }

    /// The `redis://` URLs of every node, stopped or not: the seeds for a cluster client.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The ports of the masters now, as a live node sees them (failing ones left out),
    /// in ascending order.
    pub async fn master_ports(&self) -> Vec<u16> {
        let view = view_of(self.live_node()).await;
        let masters = view.iter().filter(|seen| seen.master && !seen.failing);
        let mut ports: Vec<u16> = masters.map(|seen| seen.port).collect();
        ports.sort_unstable();
        ports
    }

    /// The port of the master serving `slot` now, as a live node sees it.
    pub async fn port_of_slot(&self, slot: u16) -> u16 {
        let view = view_of(self.live_node()).await;
        let serves = |seen: &&Seen| seen.master && covers(&seen.slots, &[(slot, slot)]);
        let Some(owner) = view.iter().find(serves) else {
            panic!("no master serves slot {slot}");
        };
        owner.port
    }

    /// The slot of `key` (`CLUSTER KEYSLOT`, asked of a live node).
    pub async fn slot_of(&self, key: &[u8]) -> u16 {
        run(self.live_node(), "CLUSTER", ("KEYSLOT", key)).await
    }

    /// The keys matching `pattern` on the node on `port` alone (`SCAN`), in order.
    pub async fn keys_on(&self, port: u16, pattern: &str) -> Vec<Vec<u8>> {
        let (mut keys, mut cursor) = (Vec::new(), 0_u64);
        loop {
            let scan = (cursor, "MATCH", pattern, "COUNT", 1000);
            let (next, batch): (u64, Vec<Vec<u8>>) = run(self.node(port), "SCAN", scan).await;
            keys.extend(batch);
            if next == 0 {
                // SCAN may answer a key twice.
                keys.sort_unstable();
                keys.dedup();
                return keys;
            }
            cursor = next;
        }
    }

    /// The node on `port`.
    pub fn node(&self, port: u16) -> &RedisServer {
        &self.nodes[self.index(port)]
    }

    /// The node on `port`, to stop, pause or restart.
    pub fn node_mut(&mut self, port: u16) -> &mut RedisServer {
        let index = self.index(port);
        &mut self.nodes[index]
    }

    /// Fails the master on `master_port` over to one of its replicas as an operator does
    /// (`CLUSTER FAILOVER` on the replica: the two agree on the replication offset first,
    /// so no write is lost), and waits until every live node has the replica serving the
    /// master's slots and the cluster ok. Returns the new master's port; the old master
    /// becomes its replica.
    pub async fn fail_over(&self, master_port: u16) -> u16 {
        let (slots, replicas) = self.slots_and_replicas(master_port, None).await;
        let _: () = run(self.node(replicas[0]), "CLUSTER", "FAILOVER").await;
        let what = format!("{} to take over from {master_port}", replicas[0]);
        wait_until(&what, || self.owner_everywhere(&replicas[..1], &slots)).await
    }

    /// Kills the master on `master_port` (SIGKILL, as a crash), and waits until the
    /// cluster has promoted one of its replicas: every live node has it serving the
    /// master's slots, and the cluster ok. Returns the new master's port. Whatever the
    /// replica had not received yet is lost. Takes a few seconds: the node timeout (1 s),
    /// then the vote of a majority of the masters.
    pub async fn kill_master(&mut self, master_port: u16) -> u16 {
        self.kill_master_resuming(master_port, None).await
    }

    /// The replicas of the master on `master_port`.
    pub async fn replicas_of(&self, master_port: u16) -> Vec<u16> {
        self.slots_and_replicas(master_port, None).await.1
    }

    /// [`kill_master`](Self::kill_master), resuming the node `paused` (a replica the test
    /// froze, so that it missed the master's last writes) once the master is dead.
    pub async fn kill_master_resuming(&mut self, master_port: u16, paused: Option<u16>) -> u16 {
        let (slots, replicas) = self.slots_and_replicas(master_port, paused).await;
        self.node_mut(master_port).stop();
        if let Some(paused) = paused {
            self.node(paused).resume();
        }
        let this = &*self;
        let what = format!("a replica of {master_port} to take over");
        wait_until(&what, || this.owner_everywhere(&replicas, &slots)).await
    }

    /// Waits until the replica on `replica` has everything its master on `master` wrote
    /// so far: replication is asynchronous, and on a busy machine a replica can lag by
    /// tens of milliseconds. Readiness polling, not a timing assertion.
    pub async fn wait_replica_in_sync(&self, master: u16, replica: u16) {
        for _ in 0..1_000 {
            let written: String = run(self.node(master), "INFO", "replication").await;
            let read: String = run(self.node(replica), "INFO", "replication").await;
            let written = field(&written, "master_repl_offset");
            if written.is_some() && written == field(&read, "slave_repl_offset") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "the replica on {replica} did not catch up with {master}:\n{}",
            self.node(replica).log()
        );
    }

    /// Starts a node stopped by [`kill_master`](Self::kill_master) again. Without
    /// persistence it comes back empty, learns that its slots have a newer owner, and
    /// becomes that owner's replica; waits until it is in sync and every live node sees it
    /// as a working replica.
    pub async fn start_again(&mut self, port: u16) {
        self.node_mut(port).start_again();
        let this = &*self;
        wait_until(&format!("{port} to rejoin"), || this.rejoined(port)).await;
    }

    /// Moves `slot` and its keys from the master serving it to the master on `to_port`,
    /// as `redis-cli --cluster reshard` does: the target marks it importing and the source
    /// migrating (meanwhile a client is sent `ASK` for a key already moved), the keys go
    /// over in batches (`MIGRATE`), and the masters are told the new owner (`CLUSTER
    /// SETSLOT … NODE`). Waits until every live node agrees on it.
    pub async fn migrate_slot(&self, slot: u16, to_port: u16) {
        let from_port = self.port_of_slot(slot).await;
        if from_port == to_port {
            return;
        }
        let (from, to) = (self.node(from_port), self.node(to_port));
        let from_id: String = run(from, "CLUSTER", "MYID").await;
        let to_id: String = run(to, "CLUSTER", "MYID").await;
        let _: () = run(to, "CLUSTER", ("SETSLOT", slot, "IMPORTING", &from_id)).await;
        let _: () = run(from, "CLUSTER", ("SETSLOT", slot, "MIGRATING", &to_id)).await;
        move_keys(from, slot, to_port).await;
        // The target first: once the source gives the slot up it redirects clients to the
        // target, which must serve them then, not send them back.
        let mut masters = vec![to_port, from_port];
        for port in self.master_ports().await {
            if !masters.contains(&port) && self.node(port).is_running() {
                masters.push(port);
            }
        }
        let setslot = ("SETSLOT", slot, "NODE", &to_id);
        for port in masters {
            let _: () = run(self.node(port), "CLUSTER", setslot).await;
        }
        let (slots, owner) = ([(slot, slot)], [to_port]);
        let what = format!("slot {slot} to move to {to_port}");
        wait_until(&what, || self.owner_everywhere(&owner, &slots)).await;
    }

    /// The slots of the master on `port`, and the ports of its live replicas (at least
    /// one), as a live node sees them. `paused`, a replica the test froze on purpose,
    /// counts as live even once the others flag it failing (after the node timeout, 1 s,
    /// which a busy machine can let pass before the test gets here).
    ///
    /// A busy machine can also delay the nodes' pings past the node timeout, so that a
    /// live replica is flagged failing for a moment: this waits until one is seen working.
    async fn slots_and_replicas(&self, port: u16, paused: Option<u16>) -> (Vec<Range>, Vec<u16>) {
        let what = format!("a live replica of {port}");
        wait_until(&what, || async {
            let view = view_of(self.live_node()).await;
            let master = view.iter().find(|seen| seen.port == port && seen.master);
            let master = master.unwrap_or_else(|| panic!("no master on port {port}"));
            let replicas: Vec<u16> = view
                .iter()
                .filter(|seen| seen.master_id.as_ref() == Some(&master.id))
                .filter(|seen| !seen.failing || Some(seen.port) == paused)
                .map(|seen| seen.port)
                .filter(|replica| self.node(*replica).is_running())
                .collect();
            match replicas.is_empty() {
                true => Err(format!("{port} has no live replica")),
                false => Ok((master.slots.clone(), replicas)),
            }
        })
        .await
    }

    /// Whether every live node has the cluster ok, and `replicas` of them are replicas in
    /// sync with their masters, as every live node sees; if not, what is missing.
    async fn formed(&self, replicas: usize) -> Result<(), String> {
        let mut in_sync = 0;
        for node in self.live() {
            healthy(node, self.nodes.len()).await?;
            let info: String = run(node, "INFO", "replication").await;
            if field(&info, "role") == Some("slave") {
                linked(node.port(), &info)?;
                in_sync += 1;
            }
            // A replica knows its role before the others hear of it: until they have,
            // a node's view can list it as a master (and its copy of the keys as a
            // master's own).
            let seen = view_of(node)
                .await
                .iter()
                .filter(|seen| !seen.master)
                .count();
            if seen != replicas {
                return Err(format!(
                    "{} sees {seen} of {replicas} replicas",
                    node.port()
                ));
            }
        }
        let missing = || format!("{in_sync} of {replicas} replicas in sync");
        (in_sync == replicas).then_some(()).ok_or_else(missing)
    }

    /// Which one of `candidates` every live node sees as the master serving all of
    /// `slots`, the cluster ok; if they do not agree on one yet, what is missing.
    async fn owner_everywhere(&self, candidates: &[u16], slots: &[Range]) -> Result<u16, String> {
        let mut owners = Vec::new();
        for node in self.live() {
            healthy(node, self.nodes.len()).await?;
            let view = view_of(node).await;
            let owner = view.iter().find(|seen| {
                let serves = seen.master && !seen.failing && covers(&seen.slots, slots);
                serves && candidates.contains(&seen.port)
            });
            let Some(owner) = owner else {
                let port = node.port();
                return Err(format!("{port}: none of {candidates:?} serves {slots:?}"));
            };
            owners.push(owner.port);
        }
        owners.dedup();
        match owners[..] {
            [owner] => Ok(owner),
            _ => Err(format!("the nodes name different owners: {owners:?}")),
        }
    }

    /// Whether the node on `port` is a replica in sync, seen as a working replica by every
    /// live node, the cluster ok; if not, what is missing.
    async fn rejoined(&self, port: u16) -> Result<(), String> {
        let info: String = run(self.node(port), "INFO", "replication").await;
        linked(port, &info)?;
        for node in self.live() {
            healthy(node, self.nodes.len()).await?;
            let view = view_of(node).await;
            let working = |seen: &Seen| seen.port == port && !seen.master && !seen.failing;
            if !view.iter().any(working) {
                return Err(format!("{}: {port} is no working replica", node.port()));
            }
        }
        Ok(())
    }

    /// Where the node on `port` is in `nodes`.
    fn index(&self, port: u16) -> usize {
        let found = self.nodes.iter().position(|node| node.port() == port);
        found.unwrap_or_else(|| panic!("no node of the cluster on port {port}"))
    }

    /// The nodes whose process runs.
    fn live(&self) -> impl Iterator<Item = &RedisServer> {
        self.nodes.iter().filter(|node| node.is_running())
    }

    /// A node whose process runs, to ask about the cluster.
    fn live_node(&self) -> &RedisServer {
        self.live().next().expect("every node is stopped")
    }
}

/// Moves the keys of `slot` from `from` to the node on `to_port`, a batch at a time.
async fn move_keys(from: &RedisServer, slot: u16, to_port: u16) {
    loop {
        let keys: Vec<Vec<u8>> = run(from, "CLUSTER", ("GETKEYSINSLOT", slot, 100)).await;
        if keys.is_empty() {
            return;
        }
        // No single key (""), database 0, a 5 s timeout, then the keys.
        let migrate = ("127.0.0.1", to_port, "", 0, 5000, "KEYS", keys);
        let _: () = run(from, "MIGRATE", migrate).await;
    }
}

/// Whether `node` has the cluster ok, all slots assigned, and knows all `nodes`; if not,
/// what it says instead.
async fn healthy(node: &RedisServer, nodes: usize) -> Result<(), String> {
    let info: String = run(node, "CLUSTER", "INFO").await;
    let state = field(&info, "cluster_state");
    let assigned = field(&info, "cluster_slots_assigned");
    let known = field(&info, "cluster_known_nodes");
    if state == Some("ok") && assigned == Some("16384") && known == Some(&nodes.to_string()) {
        return Ok(());
    }
    let port = node.port();
    Err(format!(
        "{port}: {state:?}, {assigned:?} slots, {known:?} nodes"
    ))
}

/// Whether a replica's `INFO replication` says its link to its master is up.
fn linked(port: u16, info: &str) -> Result<(), String> {
    match field(info, "master_link_status") {
        Some("up") => Ok(()),
        link => Err(format!("{port}: link to the master {link:?}")),
    }
}

/// The cluster as `node` sees it (`CLUSTER NODES`).
async fn view_of(node: &RedisServer) -> Vec<Seen> {
    let text: String = run(node, "CLUSTER", "NODES").await;
    let port = node.port();
    let parse = |line| parse(line).unwrap_or_else(|| panic!("{port}: CLUSTER NODES: {line:?}"));
    text.lines().map(parse).collect()
}

/// One line of `CLUSTER NODES`: `<id> <ip:port@bus[,hostname]> <flags> <master> <ping>
/// <pong> <epoch> <link> <slot ranges…>`, slots being imported or migrated (`[…]`) left out.
fn parse(line: &str) -> Option<Seen> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [id, address, flags, master, ..] = fields[..] else {
        return None;
    };
    let port = address.split(['@', ',']).next()?.rsplit_once(':')?.1;
    let flags: Vec<&str> = flags.split(',').collect();
    let range = |range: &&str| {
        let (first, last) = range.split_once('-').unwrap_or((range, range));
        Some((first.parse().ok()?, last.parse().ok()?))
    };
    let slots = fields.iter().skip(8).filter(|word| !word.starts_with('['));
    Some(Seen {
        id: id.to_owned(),
        port: port.parse().ok()?,
        master: flags.contains(&"master"),
        failing: flags.contains(&"fail") || flags.contains(&"fail?"),
        master_id: (master != "-").then(|| master.to_owned()),
        slots: slots.map(range).collect::<Option<Vec<Range>>>()?,
    })
}

/// Whether every range of `wanted` lies within one range of `owned`.
fn covers(owned: &[Range], wanted: &[Range]) -> bool {
    let within = |&(first, last): &Range| owned.iter().any(|&(a, b)| a <= first && last <= b);
    wanted.iter().all(within)
}

/// The value of `name` in an `INFO`-style text (`name:value` lines).
fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

/// Runs the command `name` with `args` on `node`; fails the test, naming the command and
/// the node, if it fails.
async fn run<T: FromRedisValue>(node: &RedisServer, name: &str, args: impl ToRedisArgs) -> T {
    let mut command = redis::cmd(name);
    command.arg(args);
    let answer = command.query_async(&mut node.admin().await).await;
    answer.unwrap_or_else(|err| {
        let words: Vec<String> = command
            .args_iter()
            .take(2)
            .map(|arg| match arg {
                redis::Arg::Simple(word) => String::from_utf8_lossy(word).into_owned(),
                _ => "…".to_owned(),
            })
            .collect();
        panic!("{} on {}: {err}", words.join(" "), node.port())
    })
}

/// Polls `ready` until it answers `Ok`, and returns its answer; fails the test with its
/// last complaint after [`DEADLINE`]. Readiness polling, not a timing assertion.
async fn wait_until<T, F>(what: &str, ready: impl Fn() -> F) -> T
where
    F: Future<Output = Result<T, String>>,
{
    let give_up = Instant::now() + DEADLINE;
    loop {
        match ready().await {
            Ok(done) => return done,
            Err(why) if Instant::now() > give_up => {
                panic!("waited {DEADLINE:?} for {what}, in vain: {why}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

//! The Driver/Lease contract, checked against a live driver in real time.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use robit::Driver;
use robit::driver::{Acquire, AcquireRequest, Lease, LockName, OwnerToken, Renewal};

/// How the contract checks are timed.
///
/// # Example
///
/// ```
/// use robit_conformance::ContractOptions;
/// use std::time::Duration;
///
/// let options = ContractOptions::new(Duration::from_millis(500))
///     .slack(Duration::from_millis(150))
///     .prefix("my-backend-conformance");
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
pub struct ContractOptions {
    ttl: Duration,
    slack: Duration,
    prefix: String,
}

impl ContractOptions {
    /// Grants of `ttl`, with a default slack of a fifth of it.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            slack: ttl / 5,
            prefix: "robit-conformance".to_owned(),
        }
    }

    /// How far a real backend may be off the TTL, either way (network, timer
    /// resolution). Must be under half the TTL.
    pub fn slack(mut self, slack: Duration) -> Self {
        self.slack = slack;
        self
    }

    /// The prefix of the lock names the checks use, so they do not collide with
    /// anything else on a shared backend.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }
}

impl Default for ContractOptions {
    fn default() -> Self {
        Self::new(Duration::from_millis(500))
    }
}

/// One contract check's outcome.
///
/// # Example
///
/// ```no_run
/// # async fn demo() {
/// use robit_conformance::{ContractOptions, check_contract};
///
/// let report = check_contract(robit::LocalDriver::new, &ContractOptions::default()).await;
/// for outcome in report.failures() {
///     eprintln!("broken: {} ({:?})", outcome.rule, outcome.result);
/// }
/// # }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CheckOutcome {
    /// The rule checked, as a sentence.
    pub rule: &'static str,
    /// `Err` says what the driver did instead.
    pub result: Result<(), String>,
}

/// The outcome of [`check_contract`].
///
/// # Example
///
/// ```no_run
/// # async fn demo() {
/// use robit_conformance::{ContractOptions, check_contract};
///
/// let report = check_contract(robit::LocalDriver::new, &ContractOptions::default()).await;
/// assert!(report.passed(), "{report}");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ContractReport {
    /// Every check, in order.
    pub outcomes: Vec<CheckOutcome>,
}

impl ContractReport {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.outcomes.iter().all(|outcome| outcome.result.is_ok())
    }

    /// The rules the driver broke.
    pub fn failures(&self) -> Vec<&CheckOutcome> {
        self.outcomes.iter().filter(|o| o.result.is_err()).collect()
    }
}

impl fmt::Display for ContractReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for outcome in &self.outcomes {
            match &outcome.result {
                Ok(()) => writeln!(f, "  ok    {}", outcome.rule)?,
                Err(why) => writeln!(f, "  FAIL  {}: {why}", outcome.rule)?,
            }
        }
        let failed = self.failures().len();
        write!(f, "{} checks, {failed} failed", self.outcomes.len())
    }
}

type Check = Result<(), String>;

struct Ctx<D> {
    driver: D,
    ttl: Duration,
    slack: Duration,
    name: LockName,
    owners: AtomicU64,
}

impl<D: Driver> Ctx<D> {
    fn request(&self) -> AcquireRequest {
        let owner = self.owners.fetch_add(1, Ordering::Relaxed);
        AcquireRequest::new(
            self.name.clone(),
            OwnerToken::from_u128(0xC0_FFEE_0000 + u128::from(owner)),
            self.ttl,
        )
    }

    async fn acquire(&self) -> Result<Acquire, String> {
        self.driver
            .acquire(&self.request())
            .await
            .map_err(|error| format!("acquire failed: {error}"))
    }

    async fn granted(&self, what: &str) -> Result<Arc<dyn Lease>, String> {
        match self.acquire().await? {
            Acquire::Granted(lease) => Ok(lease),
            other => Err(format!("{what}: expected a grant, got {other:?}")),
        }
    }

    async fn held(&self, what: &str) -> Check {
        match self.acquire().await? {
            Acquire::Held { expires_in } => match expires_in {
                Some(left) if left > self.ttl + self.slack => Err(format!(
                    "{what}: held, but for {left:?}, longer than the TTL {:?}",
                    self.ttl
                )),
                _ => Ok(()),
            },
            other => Err(format!(
                "{what}: expected the name to be held, got {other:?}"
            )),
        }
    }

    async fn renew(&self, lease: &Arc<dyn Lease>, expected: Renewal, what: &str) -> Check {
        match lease.renew(self.ttl).await {
            Ok(got) if got == expected => Ok(()),
            Ok(got) => Err(format!(
                "{what}: renew answered {got:?}, expected {expected:?}"
            )),
            Err(error) => Err(format!("{what}: renew failed: {error}")),
        }
    }

    async fn release(&self, lease: &Arc<dyn Lease>, what: &str) -> Check {
        lease
            .release()
            .await
            .map_err(|error| format!("{what}: release failed: {error}"))
    }

    async fn expire(&self) {
        tokio::time::sleep(self.ttl + self.slack).await;
    }
}

/// Checks `driver`'s implementation of the [`Driver`]/[`Lease`] contract, in real time
/// (tokio's clock): each rule on a fresh lock name, grants of the options' TTL. The
/// factory is called once per check; the drivers it returns must share one backend.
///
/// This is part (a) of the conformance suite, for drivers that talk to a real backend;
/// part (b), the simulation under faults, is `robit_sim::conformance::check_in_simulation`
/// in robit's repository.
pub async fn check_contract<D, F>(factory: F, options: &ContractOptions) -> ContractReport
where
    D: Driver,
    F: Fn() -> D,
{
    let mut outcomes = Vec::new();
    for (index, rule) in RULES.iter().enumerate() {
        let ctx = Ctx {
            driver: factory(),
            ttl: options.ttl,
            slack: options.slack,
            name: LockName::from(format!("{}:{index}", options.prefix)),
            owners: AtomicU64::new(0),
        };
        let limit = options.ttl * 20 + Duration::from_secs(5);
        let result = match tokio::time::timeout(limit, run_rule(index, &ctx)).await {
            Ok(result) => result,
            Err(_) => Err(format!("no answer within {limit:?}")),
        };
        outcomes.push(CheckOutcome { rule, result });
    }
    ContractReport { outcomes }
}

const RULES: [&str; 10] = [
    "a free name is granted, and a held one refused with an expiry within the TTL",
    "a grant still holds just before its TTL",
    "a grant is gone after its TTL, and the next token is higher",
    "a renew extends the grant by the TTL from the renew",
    "a renew after expiry answers lost, even if nobody took the lock",
    "a renew after a takeover answers lost and leaves the new grant alone",
    "a release frees the name at once, and releasing twice is harmless",
    "a late release never deletes a newer holder's grant",
    "fencing tokens strictly increase across releases, expiries and owners",
    "concurrent acquires of one name grant exactly one",
];

async fn run_rule<D: Driver>(index: usize, ctx: &Ctx<D>) -> Check {
    let ttl = ctx.ttl;
    match index {
        0 => {
            ctx.granted("first").await?;
            ctx.held("second").await
        }
        1 => {
            ctx.granted("first").await?;
            tokio::time::sleep(ttl.saturating_sub(ctx.slack)).await;
            ctx.held("just before the TTL").await
        }
        2 => {
            let first = ctx.granted("first").await?;
            ctx.expire().await;
            let second = ctx.granted("after the TTL").await?;
            order(first.fence().get(), second.fence().get())
        }
        3 => {
            let lease = ctx.granted("first").await?;
            tokio::time::sleep(ttl * 2 / 3).await;
            ctx.renew(&lease, Renewal::Renewed, "in time").await?;
            tokio::time::sleep(ttl * 2 / 3).await;
            ctx.held("past the first TTL, within the renewed one").await
        }
        4 => {
            let lease = ctx.granted("first").await?;
            ctx.expire().await;
            ctx.renew(&lease, Renewal::Lost, "after expiry").await
        }
        5 => {
            let stale = ctx.granted("first").await?;
            ctx.expire().await;
            let fresh = ctx.granted("after the TTL").await?;
            ctx.renew(&stale, Renewal::Lost, "the old holder").await?;
            ctx.renew(&fresh, Renewal::Renewed, "the new holder")
                .await?;
            ctx.held("a third party").await
        }
        6 => {
            let lease = ctx.granted("first").await?;
            ctx.release(&lease, "first release").await?;
            ctx.release(&lease, "second release").await?;
            ctx.granted("after the release").await.map(drop)
        }
        7 => {
            let stale = ctx.granted("first").await?;
            ctx.expire().await;
            let fresh = ctx.granted("after the TTL").await?;
            ctx.release(&stale, "the late release").await?;
            ctx.held("after the late release").await?;
            ctx.renew(&fresh, Renewal::Renewed, "the new holder").await
        }
        8 => {
            let mut last = 0;
            for round in 0..6 {
                let lease = ctx.granted("round").await?;
                order(last, lease.fence().get())?;
                last = lease.fence().get();
                if round % 2 == 0 {
                    ctx.release(&lease, "round").await?;
                } else {
                    ctx.expire().await;
                }
            }
            Ok(())
        }
        _ => {
            let attempts = futures_util::future::join_all((0..16).map(|_| ctx.acquire())).await;
            let mut grants = 0;
            for attempt in attempts {
                if let Acquire::Granted(_) = attempt? {
                    grants += 1;
                }
            }
            match grants {
                1 => Ok(()),
                n => Err(format!("{n} of 16 concurrent acquires were granted")),
            }
        }
    }
}

fn order(earlier: u64, later: u64) -> Check {
    if later > earlier {
        Ok(())
    } else {
        Err(format!("token {later} came after token {earlier}"))
    }
}

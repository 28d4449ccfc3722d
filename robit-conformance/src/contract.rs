//! The Driver/Lease contract, checked against a live driver in real time.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use robit::Driver;
use robit::driver::{Acquire, AcquireRequest, Lease, LockName, OwnerToken, Renewal, Waiter};
use tokio::time::Instant;

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

/// Why a check did not pass.
enum Failed {
    /// The driver broke the rule.
    Broken(String),
    /// A step meant to come while a grant still held was sent after the grant's TTL less
    /// the slack: the machine stalled, and the answer proves nothing either way.
    TooSlow(String),
}

impl From<String> for Failed {
    fn from(why: String) -> Self {
        Self::Broken(why)
    }
}

type Check = Result<(), Failed>;

/// How many times a check is tried while its steps come too late to conclude.
const ATTEMPTS: u32 = 3;

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

    async fn held(&self, what: &str) -> Result<(), String> {
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

    async fn renew(
        &self,
        lease: &Arc<dyn Lease>,
        expected: Renewal,
        what: &str,
    ) -> Result<(), String> {
        match lease.renew(self.ttl).await {
            Ok(got) if got == expected => Ok(()),
            Ok(got) => Err(format!(
                "{what}: renew answered {got:?}, expected {expected:?}"
            )),
            Err(error) => Err(format!("{what}: renew failed: {error}")),
        }
    }

    async fn release(&self, lease: &Arc<dyn Lease>, what: &str) -> Result<(), String> {
        lease
            .release()
            .await
            .map_err(|error| format!("{what}: release failed: {error}"))
    }

    async fn expire(&self) {
        tokio::time::sleep(self.ttl + self.slack).await;
    }

    /// `step`, which needs the grant (or renewal) sent at `since` to hold. A failure
    /// answered before that grant's TTL less the slack is the driver's: the backend saw
    /// the step in time. One answered later may be the machine's (a stall between the
    /// steps, or in flight), and proves nothing either way.
    async fn while_held(
        &self,
        since: Instant,
        what: &str,
        step: impl Future<Output = Result<(), String>>,
    ) -> Check {
        let result = step.await;
        let answered = Instant::now();
        match result {
            Ok(()) => Ok(()),
            Err(why) if answered >= since + self.ttl.saturating_sub(self.slack) => {
                Err(Failed::TooSlow(format!(
                    "{what} was answered {:?} after its grant, too late to conclude: {why}",
                    answered - since
                )))
            }
            Err(why) => Err(Failed::Broken(why)),
        }
    }

    /// A grant, and when its acquire was sent.
    async fn granted_at(&self, what: &str) -> Result<(Arc<dyn Lease>, Instant), String> {
        let sent = Instant::now();
        Ok((self.granted(what).await?, sent))
    }
}

/// Checks `driver`'s implementation of the [`Driver`]/[`Lease`] contract, in real time
/// (tokio's clock): each rule on a fresh lock name, grants of the options' TTL. The
/// factory is called once per check; the drivers it returns must share one backend.
///
/// A step that needs a grant to still hold (a renewal expected to succeed, a rival
/// expected to be refused) and fails only after that grant's TTL less the slack has
/// been answered too late to blame the driver: on a busy machine the process can stall
/// between steps. Such a check is run again, on another lock name, up to three times in
/// all, and fails as too slow to conclude if it never is. A step that fails in time fails
/// its check at once.
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
        let result = check_rule(index, &factory, options).await;
        outcomes.push(CheckOutcome { rule, result });
    }
    ContractReport { outcomes }
}

const RULES: [&str; 11] = [
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
    "a waiter granted after a release holds for the TTL from its attempt answered held",
];

/// Checks rule `index` on a fresh lock name, again (on another) while its steps come too
/// late to conclude, up to [`ATTEMPTS`] times.
async fn check_rule<D: Driver>(
    index: usize,
    factory: &impl Fn() -> D,
    options: &ContractOptions,
) -> Result<(), String> {
    let mut late = String::new();
    for attempt in 0..ATTEMPTS {
        let name = match attempt {
            0 => format!("{}:{index}", options.prefix),
            again => format!("{}:{index}:again-{again}", options.prefix),
        };
        let ctx = Ctx {
            driver: factory(),
            ttl: options.ttl,
            slack: options.slack,
            name: LockName::from(name),
            owners: AtomicU64::new(0),
        };
        let limit = options.ttl * 20 + Duration::from_secs(5);
        match tokio::time::timeout(limit, run_rule(index, &ctx)).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(Failed::Broken(why))) => return Err(why),
            Ok(Err(Failed::TooSlow(why))) => late = why,
            Err(_) => return Err(format!("no answer within {limit:?}")),
        }
    }
    Err(format!(
        "too slow to conclude in {ATTEMPTS} attempts: {late}"
    ))
}

async fn run_rule<D: Driver>(index: usize, ctx: &Ctx<D>) -> Check {
    let ttl = ctx.ttl;
    match index {
        0 => {
            let (_first, sent) = ctx.granted_at("first").await?;
            ctx.while_held(sent, "second", ctx.held("second")).await
        }
        1 => {
            let (_first, sent) = ctx.granted_at("first").await?;
            tokio::time::sleep(ttl.saturating_sub(ctx.slack) * 9 / 10).await;
            let what = "just before the TTL";
            ctx.while_held(sent, what, ctx.held(what)).await
        }
        2 => {
            let first = ctx.granted("first").await?;
            ctx.expire().await;
            let second = ctx.granted("after the TTL").await?;
            Ok(order(first.fence().get(), second.fence().get())?)
        }
        3 => {
            let (lease, sent) = ctx.granted_at("first").await?;
            tokio::time::sleep(ttl * 2 / 3).await;
            let renewed = Instant::now();
            let renewal = ctx.renew(&lease, Renewal::Renewed, "in time");
            ctx.while_held(sent, "the renewal", renewal).await?;
            tokio::time::sleep(ttl * 2 / 3).await;
            let what = "past the first TTL, within the renewed one";
            ctx.while_held(renewed, what, ctx.held(what)).await
        }
        4 => {
            let lease = ctx.granted("first").await?;
            ctx.expire().await;
            Ok(ctx.renew(&lease, Renewal::Lost, "after expiry").await?)
        }
        5 => {
            let stale = ctx.granted("first").await?;
            ctx.expire().await;
            let (fresh, sent) = ctx.granted_at("after the TTL").await?;
            ctx.renew(&stale, Renewal::Lost, "the old holder").await?;
            let renewed = Instant::now();
            let renewal = ctx.renew(&fresh, Renewal::Renewed, "the new holder");
            ctx.while_held(sent, "the new holder's renewal", renewal)
                .await?;
            let what = "a third party";
            ctx.while_held(renewed, what, ctx.held(what)).await
        }
        6 => {
            let lease = ctx.granted("first").await?;
            ctx.release(&lease, "first release").await?;
            ctx.release(&lease, "second release").await?;
            ctx.granted("after the release").await?;
            Ok(())
        }
        7 => {
            let stale = ctx.granted("first").await?;
            ctx.expire().await;
            let (fresh, sent) = ctx.granted_at("after the TTL").await?;
            ctx.release(&stale, "the late release").await?;
            let what = "after the late release";
            ctx.while_held(sent, what, ctx.held(what)).await?;
            let renewal = ctx.renew(&fresh, Renewal::Renewed, "the new holder");
            ctx.while_held(sent, "the new holder's renewal", renewal)
                .await
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
        9 => {
            let attempts = futures_util::future::join_all((0..16).map(|_| ctx.acquire())).await;
            let mut grants = 0;
            for attempt in attempts {
                if let Acquire::Granted(_) = attempt? {
                    grants += 1;
                }
            }
            match grants {
                1 => Ok(()),
                n => Err(format!("{n} of 16 concurrent acquires were granted").into()),
            }
        }
        _ => handed_on(ctx).await,
    }
}

/// Rule 10: a waiter, told the name is held, is granted it once the holder releases it
/// — by its next attempt's own grant, or by a grant the release handed it
/// ([`Acquire::Handed`]), which must hold for the TTL from the attempt answered held.
async fn handed_on<D: Driver>(ctx: &Ctx<D>) -> Check {
    let first = ctx.granted("the holder").await?;
    let id = 0xC0_FFEE_0000_0000 + u128::from(ctx.owners.fetch_add(1, Ordering::Relaxed));
    let waiter = Waiter::new(id, Duration::from_secs(1));
    let mut request = ctx.request().with_waiter(waiter);
    let queued = Instant::now();
    ctx.while_held(queued, "the waiter", async {
        match ctx.driver.acquire(&request).await {
            Ok(Acquire::Held { .. }) => Ok(()),
            other => Err(format!(
                "the waiter: expected the name to be held, got {other:?}"
            )),
        }
    })
    .await?;
    ctx.release(&first, "the holder").await?;
    request.owner = ctx.request().owner;
    request.waiter = Some(waiter.on_attempt(1));
    let lease = match ctx.driver.acquire(&request).await {
        Ok(Acquire::Granted(lease) | Acquire::Handed(lease)) => lease,
        other => return Err(format!("the waiter, after the release: got {other:?}").into()),
    };
    order(first.fence().get(), lease.fence().get())?;
    let until = queued + ctx.ttl.saturating_sub(ctx.slack) * 9 / 10;
    tokio::time::sleep_until(until).await;
    let what = "a rival, just before the TTL from the waiter's attempt answered held";
    ctx.while_held(queued, what, ctx.held(what)).await?;
    ctx.release(&lease, "the waiter").await?;
    ctx.granted("after the waiter's release").await?;
    Ok(())
}

fn order(earlier: u64, later: u64) -> Result<(), String> {
    if later > earlier {
        Ok(())
    } else {
        Err(format!("token {later} came after token {earlier}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx<robit::LocalDriver> {
        Ctx {
            driver: robit::LocalDriver::new(),
            ttl: Duration::from_millis(400),
            slack: Duration::from_millis(100),
            name: LockName::from("rule"),
            owners: AtomicU64::new(0),
        }
    }

    async fn failing_after(delay: Duration) -> Result<(), String> {
        tokio::time::sleep(delay).await;
        Err("expected Renewed".to_owned())
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_answered_within_the_ttl_less_the_slack_is_the_driver_s() {
        let ctx = ctx();
        let since = Instant::now();
        let step = failing_after(Duration::from_millis(299));
        let Err(Failed::Broken(why)) = ctx.while_held(since, "a renewal", step).await else {
            panic!("a failure answered in time was not the driver's");
        };
        assert_eq!(why, "expected Renewed");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_answered_past_the_ttl_less_the_slack_proves_nothing() {
        let ctx = ctx();
        let since = Instant::now();
        let step = failing_after(Duration::from_millis(300));
        let Err(Failed::TooSlow(why)) = ctx.while_held(since, "a renewal", step).await else {
            panic!("a failure answered too late was taken for the driver's");
        };
        assert!(why.contains("a renewal was answered 300ms after"), "{why}");
    }
}

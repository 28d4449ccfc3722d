//! Drives `LocalDriver` through the public `Driver`/`Lease` traits with a fuzzed sequence
//! of operations and checks every answer against a model of the driver contract (the rules
//! numbered as in the `Driver` documentation). Time is tokio's paused clock, moved only by
//! `Advance`, so a run is deterministic and expiry boundaries are hit exactly.
#![no_main]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use robit::{Driver, LocalDriver};
use robit::driver::{Acquire, AcquireRequest, Lease, LockName, OwnerToken, ReleaseWatch, Renewal};
use tokio::time::Instant;

const NAMES: usize = 4;
/// Few owners, so that one owner often holds successive grants of a name: renew and
/// release must then tell the grants apart by their fence.
const OWNERS: u8 = 4;
const MAX_LEASES: usize = 64;
const MAX_TTL_MS: u64 = 5_000;
/// Just above the largest TTL, so one step can expire anything.
const MAX_ADVANCE_MS: u64 = 6_000;
/// Rule 6: the local driver is always reachable, so any error is a bug.
const NO_ERROR: &str = "the local driver returned an error";

#[derive(Arbitrary, Debug)]
enum Op {
    Acquire { name: u8, owner: u8, ttl: Ttl },
    Renew { lease: u8, ttl: Ttl },
    Release { lease: u8 },
    Advance { ms: u16 },
    Evict { name: u8 },
    Watch { name: u8 },
}

/// A TTL in 1..=5000 ms: never zero.
#[derive(Arbitrary, Debug, Clone, Copy)]
struct Ttl(u16);

impl Ttl {
    fn get(self) -> Duration {
        Duration::from_millis(1 + u64::from(self.0) % MAX_TTL_MS)
    }
}

/// The grant the model expects the driver to hold for a name.
#[derive(Clone, Copy, Debug)]
struct Grant {
    owner: u128,
    fence: u64,
    expires_at: Instant,
}

/// A lease the driver granted, with what it was granted for.
struct Held {
    lease: std::sync::Arc<dyn Lease>,
    name: usize,
    owner: u128,
    fence: u64,
    /// The driver dropped the grant by itself (expiry or eviction): `lost()` must complete.
    gone: bool,
}

#[derive(Default)]
struct Model {
    /// The live grant of each name.
    grants: [Option<Grant>; NAMES],
    /// The highest fence ever issued for each name.
    max_fence: [u64; NAMES],
    leases: Vec<Held>,
    /// A release watch per name, and whether the name has been freed since it was taken.
    watches: [Option<(ReleaseWatch, bool)>; NAMES],
}

impl Model {
    /// Drops every grant whose expiry is at or before `now`, as the driver's sweep does:
    /// a grant is live only while `now < expires_at`.
    fn sweep(&mut self, now: Instant) {
        for name in 0..NAMES {
            if self.grants[name].is_some_and(|grant| grant.expires_at <= now) {
                self.free(name, true);
            }
        }
    }

    /// Removes `name`'s grant. `by_driver`: expired or evicted, not released by its holder.
    fn free(&mut self, name: usize, by_driver: bool) {
        let Some(grant) = self.grants[name].take() else {
            return;
        };
        if by_driver {
            for held in &mut self.leases {
                if held.name == name && held.fence == grant.fence {
                    held.gone = true;
                }
            }
        }
        if let Some((_, freed)) = &mut self.watches[name] {
            *freed = true;
        }
    }

    /// Whether the name's live grant is this lease's: same owner *and* fence.
    fn owns(&self, held: &Held) -> bool {
        self.grants[held.name].is_some_and(|g| g.owner == held.owner && g.fence == held.fence)
    }

    /// Picks a lease by a fuzzed index, if there is any.
    fn pick(&self, index: u8) -> Option<usize> {
        (!self.leases.is_empty()).then(|| usize::from(index) % self.leases.len())
    }
}

/// Polls a future once with a no-op waker: enough to see whether it is ready now.
fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    pin!(future).poll(&mut Context::from_waker(Waker::noop()))
}

async fn apply(op: &Op, driver: &LocalDriver, names: &[LockName], model: &mut Model) {
    let now = Instant::now();
    match *op {
        Op::Acquire { name, owner, ttl } => {
            let (n, ttl) = (usize::from(name) % NAMES, ttl.get());
            let owner = u128::from(owner % OWNERS);
            let request = AcquireRequest::new(names[n].clone(), OwnerToken::from_u128(owner), ttl);
            let answer = driver.acquire(&request);
            match (answer.await.expect(NO_ERROR), model.grants[n]) {
                // Rule 1: a live grant refuses everyone; Held says exactly how long it has left.
                (Acquire::Held { expires_in }, Some(grant)) => {
                    let left = grant.expires_at - now;
                    assert_eq!(expires_in, Some(left), "Held's expires_in on name {n}");
                }
                // A free name (never taken, released, expired or evicted) is granted.
                (Acquire::Granted(lease), None) => {
                    let (fence, max) = (lease.fence().get(), model.max_fence[n]);
                    // Rule 3: tokens start at 1 and strictly increase per name.
                    assert!(fence >= 1 && fence > max, "fence {fence} after {max}");
                    model.max_fence[n] = fence;
                    let expires_at = now + ttl;
                    model.grants[n] = Some(Grant {
                        owner,
                        fence,
                        expires_at,
                    });
                    // Past the cap the lease is dropped; its grant lives on until expiry.
                    if model.leases.len() < MAX_LEASES {
                        let (name, gone) = (n, false);
                        model.leases.push(Held {
                            lease,
                            name,
                            owner,
                            fence,
                            gone,
                        });
                    }
                }
                (answer, grant) => panic!("acquire of name {n}: {answer:?}, model: {grant:?}"),
            }
        }
        Op::Renew { lease, ttl } => {
            let Some(i) = model.pick(lease) else { return };
            let owned = model.owns(&model.leases[i]);
            let held = &model.leases[i];
            let answer = held.lease.renew(ttl.get()).await.expect(NO_ERROR);
            // Rule 4: Renewed only for the lease's own live grant; an expired or evicted
            // grant is Lost even when nobody else holds the name.
            let expected = if owned {
                Renewal::Renewed
            } else {
                Renewal::Lost
            };
            assert_eq!(answer, expected, "renew of lease {i}, fence {}", held.fence);
            if let (true, Some(grant)) = (owned, &mut model.grants[held.name]) {
                grant.expires_at = now + ttl.get(); // The local driver's exact extension.
            }
        }
        Op::Release { lease } => {
            let Some(i) = model.pick(lease) else { return };
            let owned = model.owns(&model.leases[i]);
            let held = &model.leases[i];
            // Rule 5: idempotent, never an error. Rule 4: only the lease's own grant goes;
            // `check` then catches a release that deleted anything else.
            held.lease.release().await.expect(NO_ERROR);
            if owned {
                model.free(held.name, false);
            }
        }
        Op::Advance { ms } => {
            let by = Duration::from_millis(u64::from(ms) % MAX_ADVANCE_MS);
            tokio::time::advance(by).await;
        }
        Op::Evict { name } => {
            let n = usize::from(name) % NAMES;
            let had = model.grants[n].is_some();
            assert_eq!(driver.evict(&names[n]), had, "evict of name {n}");
            model.free(n, true);
        }
        Op::Watch { name } => {
            let n = usize::from(name) % NAMES;
            let request = AcquireRequest::new(
                names[n].clone(),
                OwnerToken::from_u128(0),
                Duration::from_secs(1),
            );
            model.watches[n] = Some((driver.watch_release(&request), false));
        }
    }
}

/// Checks the state the driver exposes against the model, after every operation.
fn check(driver: &LocalDriver, model: &mut Model) {
    model.sweep(Instant::now());
    let live = model.grants.iter().flatten().count();
    assert_eq!(driver.len(), live, "driver.len() against the model");
    for (i, held) in model.leases.iter().enumerate() {
        let lost = poll_once(held.lease.lost()).is_ready();
        if model.owns(held) {
            // A spurious loss signal would make the Mutex give up a lock it still holds.
            assert!(!lost, "lost() of lease {i} completed, its grant is live");
        } else if held.gone {
            assert!(lost, "lost() of lease {i} pending, its grant is gone");
        }
        // Released by its holder: lost() may do either.
    }
    for (n, slot) in model.watches.iter_mut().enumerate() {
        if let Some((watch, freed)) = slot {
            // Spurious completions are allowed; missing a release after the watch is not.
            let fired = poll_once(&mut *watch).is_ready();
            assert!(fired || !*freed, "watch on name {n} missed a release");
            if fired {
                *slot = None;
            }
        }
    }
}

async fn run(ops: Vec<Op>) {
    let driver = LocalDriver::new();
    let names: Vec<LockName> = (0..NAMES)
        .map(|n| LockName::from(format!("lock-{n}")))
        .collect();
    let mut model = Model::default();
    for op in &ops {
        apply(op, &driver, &names, &mut model).await;
        check(&driver, &mut model);
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    runtime.block_on(run(ops));
});

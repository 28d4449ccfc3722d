//! Deliberately broken drivers: an in-memory lock table with one bug each, for the
//! conformance suite to catch.

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use robit::driver::{Acquire, AcquireRequest, DriverError, Lease, OwnerToken, Renewal};
use robit::sources::Clock;
use robit::{Driver, FenceToken};
use tokio::time::Instant;

/// Every planted driver bug (the control, [`Bug::None`], aside).
pub const DRIVER_BUGS: [Bug; 7] = [
    Bug::ReleaseWithoutOwnerCheck,
    Bug::RenewWithoutOwnerCheck,
    Bug::NonAtomicAcquire,
    Bug::TokenResetsAfterExpiry,
    Bug::TtlIgnored,
    Bug::GrantOutlivesTtl,
    Bug::RenewSucceedsAfterExpiry,
];

/// Every bug planted in the mutex itself (`cfg(robit_mutants)`).
#[cfg(robit_mutants)]
pub const LIBRARY_BUGS: [robit::Mutant; 4] = [
    robit::Mutant::ValidityFromReceive,
    robit::Mutant::DriftIgnored,
    robit::Mutant::NoLossSignal,
    robit::Mutant::LossAfterUnlock,
];

/// Changes planted in robit's scripts as the simulated Redis runs them: what each
/// breaks, the text found, and what replaces it.
pub const SCRIPT_CHANGES: [(&str, &str, &str); 3] = [
    (
        "acquire grants over a holder",
        "if blocks > now then\n  -- Held, or in the lock-delay after its holder's lease expired.\n  wait_in_line(old, blocks, flagged)",
        "if false then\n  wait_in_line(old, blocks, flagged)",
    ),
    (
        "renew extends anyone's grant",
        "if reserved or id ~= ARGV[1] then\n  return 0\nend\nlocal t, now = clock()",
        "if false then\n  return 0\nend\nlocal t, now = clock()",
    ),
    (
        "one byte: the scripts read TIME's seconds as a tenth of what they are",
        "tonumber(s) * 1000",
        "tonumber(s) * 100",
    ),
];

/// The bug a [`PlantedDriver`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bug {
    /// None: the control, which must pass everything.
    None,
    /// Release deletes the grant without checking whose it is.
    ReleaseWithoutOwnerCheck,
    /// Renew extends the grant without checking whose it is.
    RenewWithoutOwnerCheck,
    /// Acquire checks that the name is free, yields, then sets: not atomic.
    NonAtomicAcquire,
    /// The fencing counter lives with the grant, so it starts over after an expiry.
    TokenResetsAfterExpiry,
    /// The TTL is ignored: grants never expire.
    TtlIgnored,
    /// Grants last twice the TTL asked for: safe, but a crashed holder blocks the others
    /// for twice as long as promised.
    GrantOutlivesTtl,
    /// A renew after expiry answers "renewed" without bringing the grant back.
    RenewSucceedsAfterExpiry,
}

#[derive(Debug, Clone)]
struct Grant {
    owner: OwnerToken,
    token: u64,
    expires: Instant,
}

#[derive(Debug, Default)]
struct Table {
    grants: BTreeMap<Vec<u8>, Grant>,
    counter: u64,
}

/// An in-memory driver, correct except for its [`Bug`].
#[derive(Clone)]
pub struct PlantedDriver {
    bug: Bug,
    clock: Arc<dyn Clock>,
    table: Arc<Mutex<Table>>,
}

impl PlantedDriver {
    pub fn new(bug: Bug, clock: Arc<dyn Clock>) -> Self {
        Self {
            bug,
            clock,
            table: Arc::default(),
        }
    }

    fn live(&self, table: &mut Table, name: &[u8]) -> Option<Grant> {
        let now = self.clock.now();
        match table.grants.get(name) {
            Some(grant) if grant.expires > now => Some(grant.clone()),
            Some(_) => {
                table.grants.remove(name);
                None
            }
            None => None,
        }
    }

    fn expiry(&self, ttl: Duration) -> Instant {
        if self.bug == Bug::TtlIgnored {
            self.clock.now() + Duration::from_secs(365 * 24 * 3600)
        } else if self.bug == Bug::GrantOutlivesTtl {
            self.clock.now() + ttl * 2
        } else {
            self.clock.now() + ttl
        }
    }
}

#[robit::driver::async_trait]
impl Driver for PlantedDriver {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        let name = request.name.as_bytes().to_vec();
        {
            let mut table = self
                .table
                .lock()
                .map_err(|_| DriverError::rejected("poisoned"))?;
            if let Some(grant) = self.live(&mut table, &name) {
                let left = grant.expires.saturating_duration_since(self.clock.now());
                return Ok(Acquire::Held {
                    expires_in: Some(left),
                });
            }
        }
        if self.bug == Bug::NonAtomicAcquire {
            // Check, then set: another acquire can slip in between.
            tokio::task::yield_now().await;
        }
        let mut table = self
            .table
            .lock()
            .map_err(|_| DriverError::rejected("poisoned"))?;
        if self.bug != Bug::NonAtomicAcquire
            && let Some(grant) = self.live(&mut table, &name)
        {
            let left = grant.expires.saturating_duration_since(self.clock.now());
            return Ok(Acquire::Held {
                expires_in: Some(left),
            });
        }
        let token = if self.bug == Bug::TokenResetsAfterExpiry {
            // The counter is kept with the name's grant, and the grant is gone.
            1
        } else {
            table.counter += 1;
            table.counter
        };
        let grant = Grant {
            owner: request.owner,
            token,
            expires: self.expiry(request.ttl),
        };
        table.grants.insert(name.clone(), grant);
        Ok(Acquire::Granted(Arc::new(PlantedLease {
            driver: self.clone(),
            name,
            owner: request.owner,
            token,
        })))
    }
}

struct PlantedLease {
    driver: PlantedDriver,
    name: Vec<u8>,
    owner: OwnerToken,
    token: u64,
}

impl PlantedLease {
    fn mine(&self, grant: &Grant) -> bool {
        grant.owner == self.owner && grant.token == self.token
    }
}

#[robit::driver::async_trait]
impl Lease for PlantedLease {
    fn fence(&self) -> FenceToken {
        FenceToken::new(self.token)
    }

    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
        let driver = &self.driver;
        let mut table = driver
            .table
            .lock()
            .map_err(|_| DriverError::rejected("poisoned"))?;
        match driver.live(&mut table, &self.name) {
            Some(grant) if self.mine(&grant) || driver.bug == Bug::RenewWithoutOwnerCheck => {
                let expires = driver.expiry(ttl);
                if let Some(grant) = table.grants.get_mut(&self.name) {
                    grant.expires = expires;
                }
                Ok(Renewal::Renewed)
            }
            None if driver.bug == Bug::RenewSucceedsAfterExpiry => Ok(Renewal::Renewed),
            _ => Ok(Renewal::Lost),
        }
    }

    async fn release(&self) -> Result<(), DriverError> {
        let driver = &self.driver;
        let mut table = driver
            .table
            .lock()
            .map_err(|_| DriverError::rejected("poisoned"))?;
        if let Some(grant) = driver.live(&mut table, &self.name)
            && (self.mine(&grant) || driver.bug == Bug::ReleaseWithoutOwnerCheck)
        {
            table.grants.remove(&self.name);
        }
        Ok(())
    }
}

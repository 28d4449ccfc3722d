//! The complete example of docs/driver-authors.md, run for real: a new driver (an
//! in-memory table standing in for a database) put through both parts of the
//! conformance suite. The code is the guide's, except for the scenarios' path, fewer
//! seeds and model-checking sequences, and printed reports; keep the two in step.

#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use robit::driver::{
    Acquire, AcquireRequest, DriverError, Lease, LockName, OwnerToken, Renewal, async_trait,
};
use robit::sources::{Clock, TokioClock};
use robit::{Driver, FenceToken};
use robit_sim::DriverFactory;
use robit_sim::conformance::{
    ContractOptions, SimulationOptions, check_contract, check_in_simulation,
};
use tokio::time::Instant;

/// One row of the `locks` table.
struct Row {
    owner: OwnerToken,
    fence: FenceToken,
    expires_at: Instant,
}

/// The "database": the `locks` table, and the sequence fencing tokens come from.
#[derive(Default)]
struct Database {
    locks: BTreeMap<LockName, Row>,
    fence_seq: u64,
}

/// Clones share one database, as clients share one server.
#[derive(Clone)]
struct TableDriver {
    clock: Arc<dyn Clock>,
    db: Arc<Mutex<Database>>,
}

impl TableDriver {
    fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            db: Arc::default(),
        }
    }

    /// A transaction: everything done under one guard is atomic.
    fn begin(&self) -> MutexGuard<'_, Database> {
        self.db.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `now + ttl`, or a permanent error for a TTL the clock cannot represent.
    fn expiry(&self, now: Instant, ttl: Duration) -> Result<Instant, DriverError> {
        now.checked_add(ttl)
            .ok_or_else(|| DriverError::rejected(format!("a TTL of {ttl:?} is too long")))
    }
}

#[async_trait]
impl Driver for TableDriver {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        let mut db = self.begin();
        let now = self.clock.now();
        // INSERT … ON CONFLICT (name) DO UPDATE … WHERE locks.expires_at <= now
        if let Some(row) = db.locks.get(&request.name)
            && row.expires_at > now
        {
            let expires_in = Some(row.expires_at - now);
            return Ok(Acquire::Held { expires_in });
        }
        let expires_at = self.expiry(now, request.ttl)?;
        db.fence_seq += 1;
        let fence = FenceToken::new(db.fence_seq);
        let row = Row {
            owner: request.owner,
            fence,
            expires_at,
        };
        db.locks.insert(request.name.clone(), row);
        Ok(Acquire::Granted(Arc::new(TableLease {
            driver: self.clone(),
            name: request.name.clone(),
            owner: request.owner,
            fence,
        })))
    }
}

/// One grant: (name, owner, fence).
struct TableLease {
    driver: TableDriver,
    name: LockName,
    owner: OwnerToken,
    fence: FenceToken,
}

impl TableLease {
    fn is_mine(&self, row: &Row) -> bool {
        row.owner == self.owner && row.fence == self.fence
    }
}

#[async_trait]
impl Lease for TableLease {
    fn fence(&self) -> FenceToken {
        self.fence
    }

    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
        let mut db = self.driver.begin();
        let now = self.driver.clock.now();
        let until = self.driver.expiry(now, ttl)?;
        // UPDATE locks SET expires_at = $until
        //  WHERE name = $name AND owner = $owner AND fence = $fence AND expires_at > now
        match db.locks.get_mut(&self.name) {
            Some(row) if self.is_mine(row) && row.expires_at > now => {
                row.expires_at = until;
                Ok(Renewal::Renewed)
            }
            _ => Ok(Renewal::Lost),
        }
    }

    async fn release(&self) -> Result<(), DriverError> {
        let mut db = self.driver.begin();
        // DELETE FROM locks WHERE name = $name AND owner = $owner AND fence = $fence
        let row = db.locks.get(&self.name);
        if row.is_some_and(|row| self.is_mine(row)) {
            db.locks.remove(&self.name);
        }
        Ok(())
    }
}

/// Part (a): the ten contract rules, in tokio's paused time.
#[tokio::test(start_paused = true)]
async fn table_driver_keeps_the_contract() {
    let driver = TableDriver::new(Arc::new(TokioClock));
    let report = check_contract(|| driver.clone(), &ContractOptions::default()).await;
    println!("{report}");
    assert!(report.passed(), "{report}");
}

/// Part (b): every scenario and model checking, on the simulated backend host's clock.
#[test]
fn table_driver_passes_the_simulation() {
    let scenarios = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
    let factory = DriverFactory::new(|clock| TableDriver::new(Arc::new(clock)));
    let options = SimulationOptions::new(scenarios).seeds(1).model_cases(8);
    let report = check_in_simulation(&factory, &options).expect("the scenarios load");
    println!("{report}\nskipped: {:?}", report.skipped);
    assert!(!report.runs.is_empty(), "no scenarios in {scenarios}");
    assert!(report.passed(), "{report}");
}

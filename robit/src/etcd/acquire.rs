//! One acquire attempt: one transaction that queues the caller's entry (unless it is
//! queued already) and reads the queue, sent together with a keepalive of the entry's
//! lease — one round trip.
//!
//! The queue is every entry under the lock's prefix, oldest first by create revision;
//! its head holds the lock. A waiter's entry, written on its first attempt, stays in
//! place across attempts, so waiters are served in the order they first asked. A
//! single try (no waiter) writes an entry only when the queue is empty: it never
//! queues.

use std::sync::Arc;

use etcd_client::{
    Compare, CompareOp, GetOptions, KeyValue, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
    TxnOpResponse, TxnResponse,
};

use super::error::is_lease_gone;
use super::lease::EtcdLease;
use super::session::{Kept, lease_seconds};
use super::{Shared, keys};
use crate::driver::{Acquire, AcquireRequest, DriverError, FenceToken};

/// What one attempt came to, short of an error.
enum Attempt {
    Done(Acquire),
    /// The driver's lease expired or was revoked: grant another and try again.
    LeaseGone,
}

/// Tries once to acquire (twice if the driver's lease turns out to be gone).
pub(super) async fn acquire(
    shared: &Arc<Shared>,
    request: &AcquireRequest,
) -> Result<Acquire, DriverError> {
    let seconds = lease_seconds(request.ttl);
    for _ in 0..2 {
        let lease = shared.session.lease(seconds).await?;
        match attempt(shared, request, lease, seconds).await? {
            Attempt::Done(acquire) => return Ok(acquire),
            Attempt::LeaseGone => shared.session.forget(seconds, lease).await,
        }
    }
    Err(DriverError::unavailable(
        "the driver's etcd lease was gone twice in a row; is something revoking it?",
    ))
}

async fn attempt(
    shared: &Arc<Shared>,
    request: &AcquireRequest,
    lease: i64,
    seconds: u64,
) -> Result<Attempt, DriverError> {
    let settings = shared.session.settings();
    let prefix = keys::prefix(&settings.namespace, &request.name);
    let key = keys::entry(&prefix, request);
    let link = shared.session.client().await?;
    let stale = shared.unsettled.stale(&key);
    let txn = transaction(&prefix, &key, request, lease, &stale);
    shared
        .unsettled
        .attempting(&key, request, settings.request_timeout);
    let mut kv = link.client.kv_client();
    let (answer, kept) = tokio::join!(kv.txn(txn), shared.session.keep_alive(lease));
    let answer = match answer {
        Ok(answer) => answer,
        Err(err) if is_lease_gone(&err) => return Ok(Attempt::LeaseGone),
        Err(err) => {
            return Err(shared
                .session
                .failed(link.index, "acquiring an etcd lock", err));
        }
    };
    shared.unsettled.swept(&stale);
    // The entry lives as long as its lease: granted only if the keepalive, sent with the
    // transaction, kept the lease alive for the TTL from this attempt's send.
    if kept? == Kept::Gone {
        return Ok(Attempt::LeaseGone);
    }
    let revision = answer.header().map_or(0, |header| header.revision());
    if request.waiter.is_none() {
        return Ok(Attempt::Done(if answer.succeeded() {
            granted(shared, key, revision, lease, seconds, request)
        } else {
            Acquire::Held { expires_in: None }
        }));
    }
    let queue = queue_of(answer);
    let Some(place) = queue.iter().position(|entry| entry.key() == key.as_slice()) else {
        return Err(DriverError::rejected(
            "the etcd transaction's read of the queue lacks the entry it wrote",
        ));
    };
    if place == 0 {
        let fence = queue[0].create_revision();
        return Ok(Attempt::Done(granted(
            shared, key, fence, lease, seconds, request,
        )));
    }
    // Wait for the entry just ahead to go, from the revision this read saw.
    shared
        .waiting
        .ahead_of(request, queue[place - 1].key().to_vec(), revision);
    Ok(Attempt::Done(Acquire::Held { expires_in: None }))
}

/// The transaction of one attempt. A waiter: queue the entry unless it is queued, then
/// read the queue. A try: write the entry only if the queue is empty. Either way, it
/// first deletes the `stale` entries of callers that went away.
fn transaction(
    prefix: &[u8],
    key: &[u8],
    request: &AcquireRequest,
    lease: i64,
    stale: &[Vec<u8>],
) -> Txn {
    let end = keys::range_end(prefix);
    let sweep = || stale.iter().map(|key| TxnOp::delete(key.clone(), None));
    let put = TxnOp::put(
        key.to_vec(),
        keys::owner_value(request.owner),
        Some(PutOptions::new().with_lease(lease)),
    );
    if request.waiter.is_none() {
        let empty = Compare::create_revision(prefix.to_vec(), CompareOp::Equal, 0).with_range(end);
        return Txn::new()
            .when([empty])
            .and_then(sweep().chain([put]).collect::<Vec<_>>())
            .or_else(sweep().collect::<Vec<_>>());
    }
    let queue = TxnOp::get(
        prefix.to_vec(),
        Some(
            GetOptions::new()
                .with_range(end)
                .with_sort(SortTarget::Create, SortOrder::Ascend)
                .with_keys_only(),
        ),
    );
    let absent = Compare::create_revision(key.to_vec(), CompareOp::Equal, 0);
    Txn::new()
        .when([absent])
        .and_then(sweep().chain([put, queue.clone()]).collect::<Vec<_>>())
        .or_else(sweep().chain([queue]).collect::<Vec<_>>())
}

/// The queue the transaction read: its last operation's answer.
fn queue_of(answer: TxnResponse) -> Vec<KeyValue> {
    match answer.op_responses().pop() {
        Some(TxnOpResponse::Get(mut read)) => read.take_kvs(),
        _ => Vec::new(),
    }
}

fn granted(
    shared: &Arc<Shared>,
    key: Vec<u8>,
    revision: i64,
    lease: i64,
    seconds: u64,
    request: &AcquireRequest,
) -> Acquire {
    shared.waiting.served(request);
    shared.unsettled.settled(&key);
    let fence = FenceToken::new(u64::try_from(revision).unwrap_or(0));
    Acquire::Granted(Arc::new(EtcdLease::new(
        Arc::clone(shared),
        key,
        fence,
        lease,
        seconds,
    )))
}

//! One acquire attempt: one transaction that queues the caller's entry (unless it is
//! queued already), claims the lock if the entry is at the head, and reads the queue —
//! sent together with a keepalive of the entry's lease: one round trip.
//!
//! The queue is every entry under the lock's prefix, oldest first by create revision;
//! its head holds the lock. A waiter's entry, written on its first attempt, keeps its
//! place across attempts, so waiters are served in the order they first asked. An
//! attempt is granted only with the entry's value its own (attempt number and owner):
//! the first attempt writes it; a later one rewrites it in the same transaction that
//! finds the entry at the head, and only over an earlier attempt's value. So a grant is
//! one attempt's alone, and an earlier attempt that is granted late (its answer came
//! after the Mutex gave up on it) can neither renew nor release the later one's. A
//! single try (no waiter) writes an entry only when the queue is empty: it never queues.

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

/// One attempt's keys and value.
struct Entry {
    prefix: Vec<u8>,
    key: Vec<u8>,
    value: Vec<u8>,
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
    let entry = Entry {
        value: keys::value(request),
        prefix,
        key,
    };
    let link = shared.session.client().await?;
    let away = request.waiter.map_or(settings.request_timeout, |waiter| {
        waiter.retry_within * 4 + settings.request_timeout
    });
    let _in_flight = shared.unsettled.attempting(&entry.key, &entry.value, away);
    let txn = transaction(&entry, request, lease, shared.waiting.revision(request));
    let mut kv = link.client.kv_client();
    let (answer, kept, ()) = tokio::join!(
        kv.txn(txn),
        shared.session.keep_alive(lease),
        shared.sweep(&link)
    );
    let answer = match answer {
        Ok(answer) => answer,
        Err(err) if is_lease_gone(&err) => return Ok(Attempt::LeaseGone),
        Err(err) => {
            return Err(shared
                .session
                .failed(link.index, "acquiring an etcd lock", err));
        }
    };
    // The entry lives as long as its lease: granted only if the keepalive, sent with the
    // transaction, kept the lease alive for the TTL from this attempt's send.
    if kept? == Kept::Gone {
        return Ok(Attempt::LeaseGone);
    }
    let revision = answer
        .header()
        .map(|header| header.revision())
        .ok_or_else(|| DriverError::rejected("etcd answered a transaction without a header"))?;
    let outcome = match request.waiter {
        None if answer.succeeded() => granted(shared, entry, revision, lease, seconds),
        None => {
            // The try wrote nothing: there is nothing of it to sweep.
            shared.unsettled.settled(&entry.key);
            Acquire::Held { expires_in: None }
        }
        Some(_) => queued(
            shared,
            request,
            entry,
            queue_of(answer),
            revision,
            lease,
            seconds,
        )?,
    };
    Ok(Attempt::Done(outcome))
}

/// A waiter's outcome, from the queue its transaction read.
fn queued(
    shared: &Arc<Shared>,
    request: &AcquireRequest,
    entry: Entry,
    queue: Vec<KeyValue>,
    revision: i64,
    lease: i64,
    seconds: u64,
) -> Result<Acquire, DriverError> {
    let Some(place) = queue.iter().position(|kv| kv.key() == entry.key.as_slice()) else {
        // A later attempt of this waiter withdrew it meanwhile, or the answer is not
        // what was asked: not granted.
        return Ok(Acquire::Held { expires_in: None });
    };
    let mine = &queue[place];
    shared.waiting.queued_at(request, mine.create_revision());
    if place == 0 && mine.value() == entry.value.as_slice() {
        shared.waiting.served(request);
        // The token is the revision of the write that made this attempt's grant: each
        // grant's write comes after the last holder's entry was deleted.
        let fence = mine.mod_revision();
        return Ok(granted(shared, entry, fence, lease, seconds));
    }
    match place.checked_sub(1) {
        // Wait for the entry just ahead to go, from the revision this read saw.
        Some(ahead) => shared
            .waiting
            .ahead_of(request, Some((queue[ahead].key().to_vec(), revision))),
        // At the head, but the claim needed the entry's create revision, which this
        // attempt only now learned: try again at once.
        None => shared.waiting.ahead_of(request, None),
    }
    Ok(Acquire::Held { expires_in: None })
}

/// The transaction of one attempt.
///
/// - A try: write the entry only if the queue is empty.
/// - A waiter whose entry is missing: write it, then read the queue.
/// - A waiter whose entry was created at `created`: if the entry is still that one, at
///   the head of the queue (no entry older), and holds an earlier attempt's value,
///   write this attempt's value; then read the queue.
fn transaction(entry: &Entry, request: &AcquireRequest, lease: i64, created: Option<i64>) -> Txn {
    let end = keys::range_end(&entry.prefix);
    let put = TxnOp::put(
        entry.key.clone(),
        entry.value.clone(),
        Some(PutOptions::new().with_lease(lease)),
    );
    if request.waiter.is_none() {
        let empty =
            Compare::create_revision(entry.prefix.clone(), CompareOp::Equal, 0).with_range(end);
        return Txn::new().when([empty]).and_then([put]);
    }
    let queue = TxnOp::get(
        entry.prefix.clone(),
        Some(
            GetOptions::new()
                .with_range(end.clone())
                .with_sort(SortTarget::Create, SortOrder::Ascend),
        ),
    );
    let absent = Compare::create_revision(entry.key.clone(), CompareOp::Equal, 0);
    let mut queued = Vec::with_capacity(2);
    if let Some(created) = created {
        let claim = Txn::new()
            .when([
                Compare::create_revision(entry.key.clone(), CompareOp::Equal, created),
                Compare::create_revision(entry.prefix.clone(), CompareOp::Greater, created - 1)
                    .with_range(end),
                Compare::value(entry.key.clone(), CompareOp::Less, entry.value.clone()),
            ])
            .and_then([put.clone()]);
        queued.push(TxnOp::txn(claim));
    }
    queued.push(queue.clone());
    Txn::new()
        .when([absent])
        .and_then([put, queue])
        .or_else(queued)
}

/// The queue the transaction read: its last operation's answer.
fn queue_of(answer: TxnResponse) -> Vec<KeyValue> {
    match answer.op_responses().pop() {
        Some(TxnOpResponse::Get(mut read)) => read.take_kvs(),
        _ => Vec::new(),
    }
}

fn granted(shared: &Arc<Shared>, entry: Entry, revision: i64, lease: i64, seconds: u64) -> Acquire {
    shared.unsettled.settled(&entry.key);
    let fence = FenceToken::new(u64::try_from(revision).unwrap_or(0));
    Acquire::Granted(Arc::new(EtcdLease {
        shared: Arc::clone(shared),
        key: entry.key,
        value: entry.value,
        fence,
        lease,
        seconds,
    }))
}

//! A new namespace in cluster mode: every bucket's fencing counter, created at once.
//!
//! On one server, a namespace has one counter: once a process has seen it, a missing
//! counter can only mean lost state. A namespace spread over buckets has one counter per
//! bucket (`redis/keys.rs`), and a bucket nobody has locked in yet would look lost too.
//! So the driver whose grant created the namespace creates every other bucket's counter
//! as well, before it returns the grant: from then on, as on one server, a missing
//! counter means lost state to every process that has seen the namespace, and is
//! quarantined.
//!
//! The sweep takes some tens of milliseconds. A process whose first answer comes from a
//! bucket created meanwhile, and whose next lock falls in a bucket not reached yet,
//! takes that bucket for lost and quarantines it once (logged): safe, and only at a
//! namespace's birth; concurrent first locks of the creating driver itself can do the
//! same if one's answer is read before the creating grant's. From the moment the
//! creating grant's answer is read until its sweep ends, the driver takes a missing
//! counter for one not reached yet.

use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::future::join_all;

use crate::redis::keys::BUCKETS;
use crate::redis::scripts::ScriptCall;
use crate::redis::scripts::args::CreateArgs;
use crate::redis::{Connector, Inner};

impl<C: Connector> Inner<C> {
    /// Creates the counter of every bucket that has none, all at once over the cluster
    /// connection. A bucket left without one (its master down, say) is logged: a process
    /// that has seen the namespace quarantines it on its first lock there.
    ///
    /// Bounded by the command timeout; `_sweep` ends when it does.
    pub(in crate::redis) async fn create_buckets(&self, _sweep: Sweep<'_>) {
        let identity = match self.connection().await {
            Ok(current) => current.identity,
            Err(err) => {
                self.buckets_not_created(BUCKETS, &err.to_string());
                return;
            }
        };
        let calls: Vec<ScriptCall> = (0..BUCKETS)
            .map(|bucket| {
                let keys = self.settings.bucket_keys(bucket);
                let args = CreateArgs {
                    fence: keys.fence(),
                    server: identity.as_bytes(),
                };
                ScriptCall::new(&args, keys.call_bytes(&self.settings.channel))
            })
            .collect();
        let limit = self.settings.command_timeout;
        let Ok(answers) = tokio::time::timeout(
            limit,
            join_all(calls.iter().map(|call| self.run::<i64>(call))),
        )
        .await
        else {
            self.buckets_not_created(BUCKETS, "the counters were not all written in time");
            return;
        };
        let mut failed = answers.iter().filter_map(|answer| answer.as_ref().err());
        if let Some(first) = failed.next() {
            let count = 1 + u32::try_from(failed.count()).unwrap_or(BUCKETS);
            self.buckets_not_created(count, &first.to_string());
        }
    }

    fn buckets_not_created(&self, count: u32, error: &str) {
        tracing::warn!(
            target: "robit",
            namespace = %self.settings.namespace,
            buckets = count,
            error,
            "could not create the fencing counters of a new namespace's buckets: a process that has seen the namespace quarantines each of them on its first lock there"
        );
    }
}

impl<C: Connector> Inner<C> {
    /// Starts a sweep, unless one is running: one at a time per driver. While it runs,
    /// the driver's acquires take a missing counter for one not created yet.
    pub(in crate::redis) fn begin_sweep(&self) -> Option<Sweep<'_>> {
        (!self.sweeping.swap(true, Ordering::Relaxed)).then_some(Sweep(&self.sweeping))
    }
}

/// A sweep running; it ends when dropped, also when the acquire that runs it is given up.
pub(in crate::redis) struct Sweep<'a>(&'a AtomicBool);

impl Drop for Sweep<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

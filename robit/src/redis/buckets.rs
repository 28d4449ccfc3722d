//! A new namespace in cluster mode: every bucket's fencing counter, created at once.
//!
//! On one server, a namespace has one counter: once a process has seen it, a missing
//! counter can only mean lost state. A namespace spread over buckets has one counter per
//! bucket (keys.rs), and a bucket nobody has locked in yet would look lost too. So the
//! driver whose grant created the namespace creates every other bucket's counter as well,
//! before it returns the grant: from then on, as on one server, a missing counter means
//! lost state to every process that has seen the namespace, and is quarantined.

use futures_util::future::join_all;

use super::keys::BUCKETS;
use super::scripts::{CREATE, ScriptCall};
use super::{Connector, Inner};

impl<C: Connector> Inner<C> {
    /// Creates the counter of every bucket that has none, all at once over the cluster
    /// connection. A bucket left without one (its master down, say) is logged: a process
    /// that has seen the namespace quarantines it on its first lock there.
    pub(super) async fn create_buckets(&self) {
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
                let mut call =
                    ScriptCall::new(&CREATE, 1, 1, keys.call_bytes(&self.settings.channel));
                call.key(keys.fence()).arg(identity.as_bytes());
                call
            })
            .collect();
        let answers = join_all(calls.iter().map(|call| self.run::<i64>(call))).await;
        let failed: Vec<String> = answers
            .into_iter()
            .filter_map(|answer| answer.err().map(|err| err.to_string()))
            .collect();
        if let Some(first) = failed.first() {
            self.buckets_not_created(u32::try_from(failed.len()).unwrap_or(BUCKETS), first);
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

//! Channel subscriptions: which connections hear a PUBLISH.

use std::collections::BTreeMap;

use tokio::sync::mpsc::UnboundedSender;

use super::resp::Frame;

/// Subscribers by channel; each connection is a numbered sender of pushed frames.
#[derive(Debug, Default)]
pub(crate) struct Channels {
    subscribers: BTreeMap<Vec<u8>, BTreeMap<u64, UnboundedSender<Frame>>>,
}

impl Channels {
    pub(crate) fn subscribe(&mut self, channel: &[u8], id: u64, sender: UnboundedSender<Frame>) {
        self.subscribers
            .entry(channel.to_vec())
            .or_default()
            .insert(id, sender);
    }

    pub(crate) fn unsubscribe(&mut self, channel: &[u8], id: u64) {
        if let Some(subscribers) = self.subscribers.get_mut(channel) {
            subscribers.remove(&id);
            if subscribers.is_empty() {
                self.subscribers.remove(channel);
            }
        }
    }

    /// Sends `message` to the channel's subscribers; how many received it. Connections
    /// that have gone (their host crashed) are dropped here.
    pub(crate) fn publish(&mut self, channel: &[u8], message: &[u8]) -> i64 {
        let Some(subscribers) = self.subscribers.get_mut(channel) else {
            return 0;
        };
        let push = Frame::Array(vec![
            Frame::bulk("message"),
            Frame::bulk(channel),
            Frame::bulk(message),
        ]);
        subscribers.retain(|_, sender| sender.send(push.clone()).is_ok());
        let received = i64::try_from(subscribers.len()).unwrap_or(i64::MAX);
        if subscribers.is_empty() {
            self.subscribers.remove(channel);
        }
        received
    }
}

//! The configuration of the model check running on this thread: proptest's
//! state-machine hooks are plain functions, so the reference model (`ops`) and the
//! system under test (`sut`) both find it here.

use std::cell::RefCell;

use super::ModelConfig;

thread_local! {
    /// The configuration of the model check running on this thread: proptest's
    /// state-machine hooks are plain functions, so this is how they find it.
    static CONFIG: RefCell<Option<ModelConfig>> = const { RefCell::new(None) };
}

pub(super) fn install(config: &ModelConfig) {
    CONFIG.with(|slot| *slot.borrow_mut() = Some(config.clone()));
}

pub(super) fn uninstall() {
    CONFIG.with(|slot| *slot.borrow_mut() = None);
}

pub(super) fn config() -> ModelConfig {
    CONFIG
        .with(|slot| slot.borrow().clone())
        .unwrap_or_else(ModelConfig::local)
}

/// What a model world is made of: the sequences are generated for it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    /// The clients a command is sent to: every mutex of every host.
    pub(super) clients: usize,
    /// How many of them each host runs, over its one driver: a fault strikes a host.
    pub(super) per_host: usize,
    /// Whether the backend may lose its state.
    pub(super) state_loss: bool,
    /// How many servers the backend has.
    pub(super) servers: usize,
}

impl Shape {
    /// How many client hosts.
    pub(super) fn hosts(&self) -> usize {
        self.clients / self.per_host
    }
}

pub(super) fn shape() -> Shape {
    let config = config();
    let state_loss = config.driver.is_none()
        && matches!(
            config.world.backend(),
            crate::Backend::Redis | crate::Backend::Redlock
        );
    let per_host = per_host_of(&config);
    Shape {
        clients: config.world.clients.len() * per_host,
        per_host,
        state_loss,
        servers: config.world.servers(),
    }
}

fn per_host_of(config: &ModelConfig) -> usize {
    config
        .world
        .clients
        .first()
        .map_or(1, |client| (client.mutexes as usize).max(1))
}

/// Host `host`'s name: `c1` is 0.
pub(super) fn host_name(host: usize) -> String {
    format!("c{}", host + 1)
}

/// Client `client`'s name, as the history records it: its host's, or with several
/// mutexes a host, `c1#2` (host 0's second mutex).
pub(super) fn client_name(client: usize) -> String {
    let per_host = per_host_of(&config());
    if per_host == 1 {
        host_name(client)
    } else {
        format!("{}#{}", host_name(client / per_host), client % per_host + 1)
    }
}

/// The clients host `host` runs.
pub(super) fn clients_of(host: usize) -> std::ops::Range<usize> {
    let per_host = per_host_of(&config());
    host * per_host..(host + 1) * per_host
}

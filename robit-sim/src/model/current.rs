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

/// The number of clients, whether the backend may lose its state, and how many servers
/// it has.
pub(super) fn shape() -> (usize, bool, usize) {
    let config = config();
    let state_loss = config.driver.is_none()
        && matches!(
            config.world.backend(),
            crate::Backend::Redis | crate::Backend::Redlock
        );
    (
        config.world.clients.len(),
        state_loss,
        config.world.servers(),
    )
}

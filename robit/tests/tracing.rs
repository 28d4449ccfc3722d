//! Acquire, renew, loss and release are visible to tracing under the target `robit`.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use common::{FaultyDriver, RenewFault, within};
use robit::Mutex;
use tracing_subscriber::fmt::MakeWriter;

#[derive(Clone, Default)]
struct Captured(Arc<StdMutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Self;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Captured {
    fn lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

#[tokio::test(start_paused = true)]
async fn acquire_renew_loss_and_release_are_traced_under_the_robit_target() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(captured.clone())
        .with_ansi(false)
        .without_time()
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let ttl = Duration::from_secs(3);
    let driver = FaultyDriver::new();
    let mutex = Mutex::builder("traced", driver.clone())
        .ttl(ttl)
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    tokio::time::sleep(ttl / 2).await;
    guard.unlock().await.unwrap();
    let guard = mutex.lock().await.unwrap();
    driver.set_renew(RenewFault::AnswerLost);
    within(ttl, "the loss", guard.lost()).await;

    let lines = captured.lines();
    let find = |needle: &str| {
        lines
            .iter()
            .find(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} event in:\n{}", lines.join("\n")))
            .clone()
    };
    for event in ["acquired", "renewed", "released", "lease lost"] {
        let line = find(event);
        assert!(
            line.contains(" robit: "),
            "not under the robit target: {line}"
        );
        assert!(
            line.contains("traced"),
            "the event does not name the lock: {line}"
        );
    }
    assert!(find("lease lost").contains("WARN"));
}

//! Tracing output captured as text, for tests of what robit logs.

use std::io::Write;
use std::sync::{Arc, Mutex as StdMutex};

use tracing_subscriber::fmt::MakeWriter;

/// Everything written to a tracing subscriber, as text.
#[derive(Debug, Clone, Default)]
pub struct Captured(Arc<StdMutex<Vec<u8>>>);

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
    /// Every line captured so far.
    pub fn lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The lines captured so far that contain `words`.
    pub fn lines_with(&self, words: &str) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|line| line.contains(words))
            .collect()
    }
}

impl Captured {
    /// Captures every event at every level on this thread until the guard drops.
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(self.clone())
            .with_ansi(false)
            .without_time()
            .finish();
        let guard = tracing::subscriber::set_default(subscriber);
        // Another test's thread may have registered a callsite while no subscriber of
        // this thread wanted it, and the cached "nobody wants it" would hide its events
        // from this one when tests share a process (plain `cargo test`).
        tracing::callsite::rebuild_interest_cache();
        guard
    }
}

//! Settings shared by the benchmarks, read from the environment, and their runtime.

/// `ROBIT_BENCH_SCALE`: a factor on every phase's length (default 1).
pub(crate) fn scale() -> f64 {
    std::env::var("ROBIT_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

/// `n` scaled by [`scale`], at least 1.
pub(crate) fn scaled(n: usize) -> usize {
    ((n as f64) * scale()).max(1.0) as usize
}

/// Whether `phase` is to run: `ROBIT_BENCH_PHASES` (comma-separated) picks some; unset,
/// every phase runs.
pub(crate) fn enabled(phase: &str) -> bool {
    let phases = std::env::var("ROBIT_BENCH_PHASES").unwrap_or_default();
    phases.is_empty() || phases.split(',').any(|p| p.trim() == phase)
}

/// The runtime every bench runs its client on: one thread, so that robit and what it is
/// compared with share it turn by turn.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

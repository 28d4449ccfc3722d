//! Model checking, over the simulated Redis (with one mutex a host, and with two over
//! each host's one driver), a quorum of three of them and the local driver: random
//! sequences
//! of lock, try-lock, unlock, writes, time passing,
//! partitions (both ways and one way) and repairs, pauses, drift, client crashes and
//! restarts and backend restarts, each against a fresh simulated world, with the safety
//! promises checked after every step and liveness at the end.
//!
//! `ROBIT_MODEL_CASES` raises the number of sequences (default 24). A failure is shrunk,
//! saved under `proptest-regressions/` (replayed first on the next run), and printed
//! with its minimal sequence.

use robit_sim::{ModelConfig, check_model};

#[test]
fn random_operation_sequences_keep_the_promises_over_the_local_driver() {
    let config = ModelConfig::local()
        .regressions("proptest-regressions/model-local.txt")
        .replay_command("cargo test -p robit-sim --test sim -- model::random_operation_sequences_keep_the_promises_over_the_local_driver");
    if let Err(failure) = check_model(&config) {
        panic!("{failure}");
    }
}

#[test]
fn random_operation_sequences_keep_the_promises_over_the_redis_driver() {
    let config = ModelConfig::redis()
        .regressions("proptest-regressions/model-redis.txt")
        .replay_command("cargo test -p robit-sim --test sim -- model::random_operation_sequences_keep_the_promises_over_the_redis_driver");
    if let Err(failure) = check_model(&config) {
        panic!("{failure}");
    }
}

#[test]
fn random_operation_sequences_keep_the_promises_over_a_quorum_of_three_redis_servers() {
    let config = ModelConfig::redlock(3)
        .regressions("proptest-regressions/model-redlock.txt")
        .replay_command("cargo test -p robit-sim --test sim -- model::random_operation_sequences_keep_the_promises_over_a_quorum");
    if let Err(failure) = check_model(&config) {
        panic!("{failure}");
    }
}

#[test]
fn random_operation_sequences_keep_the_promises_with_two_mutexes_a_host_over_one_redis_driver() {
    // The two mutexes of a host share its driver: calls made together go out in batches.
    let config = ModelConfig::redis_shared()
        .regressions("proptest-regressions/model-redis-shared.txt")
        .replay_command("cargo test -p robit-sim --test sim -- model::random_operation_sequences_keep_the_promises_with_two_mutexes");
    if let Err(failure) = check_model(&config) {
        panic!("{failure}");
    }
}

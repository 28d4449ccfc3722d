//! The conformance suite and what stands behind it: robit's own drivers pass it (in
//! memory, against real redis-servers, and against a real etcd cluster with the `etcd`
//! feature, against a real Postgres with the `postgres` feature), the guide's example driver passes it, and every planted bug fails it.
//!
//! The planted bugs in robit's mutex and in the scripts the simulated Redis runs exist
//! only in a build with `ROBIT_MUTANTS=1` in its environment (`cfg(robit_mutants)`); so
//! do the tests that need them. Without it, one test here fails to say so, rather than
//! leaving them out silently.

mod conformance;
mod driver_authors_example;
#[cfg(feature = "etcd")]
mod etcd_contract;
mod planted;
#[cfg(feature = "postgres")]
mod postgres_contract;
mod quorum_contract;
#[cfg(robit_mutants)]
mod tick_sweep;

#[cfg(not(robit_mutants))]
#[test]
fn planted_bug_tests_need_robit_mutants_set() {
    panic!(
        "the planted-bug tests (conformance::every_planted_*, tick_sweep) were not compiled: \
         the bugs planted in robit's mutex and scripts exist only in a build whose \
         environment has ROBIT_MUTANTS=1. Run with it set, as the README's test command \
         (scripts/test) does: `ROBIT_MUTANTS=1 cargo test -p robit-sim`"
    );
}

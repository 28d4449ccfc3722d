//! Compiles robit's planted bugs in only when the environment asks for them.
//!
//! The planted bugs (`MutexBuilder::mutant`) exist so that robit-sim's tests can show
//! they are caught. They are selected by `cfg(robit_mutants)`, which this script sets
//! when `ROBIT_MUTANTS=1` is in the environment of the build, and by nothing else: a
//! Cargo feature would let any crate in a dependency graph switch them on, while the
//! environment of a build is its top-level author's alone. `RUSTFLAGS="--cfg
//! robit_mutants"` works too, at the price of rebuilding every dependency.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(robit_mutants)");
    println!("cargo::rerun-if-env-changed=ROBIT_MUTANTS");
    if std::env::var_os("ROBIT_MUTANTS").is_some_and(|value| value == "1") {
        println!("cargo::rustc-cfg=robit_mutants");
    }
}

//! Compiles the harness's planted bugs in (its own in the simulated Redis, and the ones
//! it selects in robit's mutex) only when `ROBIT_MUTANTS=1` is in the build's
//! environment: the same switch as robit's own build script, so that the two agree.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(robit_mutants)");
    println!("cargo::rerun-if-env-changed=ROBIT_MUTANTS");
    if std::env::var_os("ROBIT_MUTANTS").is_some_and(|value| value == "1") {
        println!("cargo::rustc-cfg=robit_mutants");
    }
}

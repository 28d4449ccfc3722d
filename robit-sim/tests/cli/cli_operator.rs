//! The operator commands against a real redis-server: `inspect` shows a lock's holder,
//! `force-release` frees it only from that holder.

use std::process::Command;
use std::time::Duration;

use robit::driver::LockName;
use robit::{Driver, Mutex};
use robit_test_support::redis::{RedisServer, driver};

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn robit_sim(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_robit-sim"))
        .args(args)
        .output()
        .expect("the binary starts");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_sees_who_holds_a_lock_and_frees_it_from_that_holder_only() {
    let server = RedisServer::start();
    let url = server.url();
    let free = robit_sim(&["inspect", "--redis", &url, "job:42"]);
    assert_eq!(
        (free.code, free.stdout.as_str()),
        (Some(0), "job:42: free\n"),
        "{}",
        free.stderr
    );

    let mutex = Mutex::builder("job:42", driver(&server))
        .ttl(Duration::from_secs(30))
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    let held = robit_sim(&["inspect", "--redis", &url, "job:42"]);
    assert_eq!(held.code, Some(0), "{}", held.stderr);
    let fence = guard.fence();
    assert!(
        held.stdout.starts_with("job:42: held by ")
            && held.stdout.contains(&format!("(fencing token {fence})")),
        "{}",
        held.stdout
    );
    let holder = held
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("holder: "))
        .expect("the full holder id")
        .to_owned();

    // Another holder's id frees nothing.
    let stranger = format!("{:032x}", u128::from_str_radix(&holder, 16).unwrap() ^ 1);
    let refused = robit_sim(&[
        "force-release",
        "--redis",
        &url,
        "job:42",
        "--holder",
        &stranger,
    ]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(
        refused.stdout.contains("not released"),
        "{}",
        refused.stdout
    );
    assert!(guard.is_held());

    let freed = robit_sim(&[
        "force-release",
        "--redis",
        &url,
        "job:42",
        "--holder",
        &holder,
    ]);
    assert_eq!(freed.code, Some(0), "{}", freed.stderr);
    assert_eq!(
        freed.stdout,
        format!("job:42: released by force from {holder}\n")
    );
    let after = driver(&server)
        .inspect(&LockName::from("job:42"))
        .await
        .unwrap();
    assert_eq!(after, robit::driver::Inspection::free());
}

#[test]
fn bad_operator_input_is_refused_with_a_one_line_error() {
    let bad_holder = robit_sim(&[
        "force-release",
        "--redis",
        "redis://127.0.0.1:1",
        "x",
        "--holder",
        "zz",
    ]);
    assert_eq!(bad_holder.code, Some(2));
    assert!(
        bad_holder.stderr.contains("32 hex digits"),
        "{}",
        bad_holder.stderr
    );
    let bad_url = robit_sim(&["inspect", "--redis", "http://nowhere", "x"]);
    assert_eq!(bad_url.code, Some(2), "{}", bad_url.stderr);
    assert_eq!(bad_url.stderr.lines().count(), 1, "{}", bad_url.stderr);
    // A server that cannot be reached is named without its password.
    let unreachable = robit_sim(&["inspect", "--redis", "redis://ops:s3cret@127.0.0.1:1", "x"]);
    assert_eq!(unreachable.code, Some(2), "{}", unreachable.stderr);
    assert!(
        unreachable.stderr.contains("unreachable"),
        "{}",
        unreachable.stderr
    );
    assert!(
        !unreachable.stderr.contains("s3cret"),
        "{}",
        unreachable.stderr
    );
}

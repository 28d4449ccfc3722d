//! What `inspect` and `force-release` do: an operator's look at a real server's lock.

use std::io::Write;

use robit::Driver;
use robit::driver::{LockName, OwnerToken};
use robit::redis::RedisDriver;

use super::{CliError, ForceReleaseArgs, LockArgs, Status, emit};

/// The driver for `lock`'s server and namespace, and a runtime to drive it on.
fn connect(lock: &LockArgs) -> Result<(tokio::runtime::Runtime, RedisDriver), CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| CliError::Redis(format!("cannot start a runtime: {error}")))?;
    // Inside the runtime: the driver's connection is made on it.
    let driver = runtime.block_on(async {
        RedisDriver::builder(&lock.redis)
            .namespace(&lock.namespace)
            .build()
    });
    let driver = driver.map_err(|error| CliError::Redis(error.to_string()))?;
    Ok((runtime, driver))
}

/// The driver's own message: it names the server without its credentials.
fn redis_error(error: robit::driver::DriverError) -> CliError {
    CliError::Redis(error.to_string())
}

/// `robit-sim inspect`: one line on the lock, and the full holder id for `force-release`.
pub(super) fn inspect(lock: &LockArgs, out: &mut dyn Write) -> Result<Status, CliError> {
    let (runtime, driver) = connect(lock)?;
    let name = LockName::from(lock.name.as_str());
    let seen = runtime
        .block_on(driver.inspect(&name))
        .map_err(redis_error)?;
    let mut text = format!("{}: {seen}\n", lock.name);
    if let Some(holder) = seen.holder {
        text.push_str(&format!("holder: {holder}\n"));
    }
    emit(out, &text)?;
    Ok(Status::Passed)
}

/// `robit-sim force-release`: frees the lock if it is still the named holder's.
pub(super) fn force_release(
    args: &ForceReleaseArgs,
    out: &mut dyn Write,
) -> Result<Status, CliError> {
    let lock = &args.lock;
    let (runtime, driver) = connect(lock)?;
    let name = LockName::from(lock.name.as_str());
    let holder = OwnerToken::from_u128(args.holder);
    let freed = runtime
        .block_on(driver.force_release(&name, holder))
        .map_err(redis_error)?;
    if freed {
        emit(
            out,
            &format!("{}: released by force from {holder}\n", lock.name),
        )?;
        Ok(Status::Passed)
    } else {
        emit(
            out,
            &format!(
                "{}: not released: {holder} does not hold it (any more); inspect it again\n",
                lock.name
            ),
        )?;
        Ok(Status::Failed)
    }
}

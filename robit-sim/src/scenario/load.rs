//! From TOML text to a validated [`Scenario`].

use std::path::Path;
use std::time::Duration;

use toml::Spanned;

use super::clients::clients;
use super::ctx::{Ctx, ms, pair};
use super::raw::RawScenario;
use super::{Backend, Client, LockSettings, Scenario, ScenarioError, Wait};
use crate::Promise;

/// The longest scenario accepted: runs must stay cheap enough to repeat over many seeds.
pub(super) const MAX_DURATION: Duration = Duration::from_secs(3600);
/// The simulation's default step: messages move between hosts at this granularity.
pub(crate) const DEFAULT_TICK: Duration = Duration::from_millis(25);
pub(super) const MIN_TICK: Duration = Duration::from_micros(100);
pub(super) const MAX_TICK: Duration = Duration::from_millis(50);
/// The most servers in a quorum.
const MAX_SERVERS: usize = 9;

pub(super) fn parse(file: &Path, text: &str) -> Result<Scenario, ScenarioError> {
    let ctx = Ctx { file, text };
    let raw: RawScenario =
        toml::from_str(text).map_err(|error| ctx.error(error.span(), error.message().trim()))?;
    let duration = name_and_duration(&ctx, &raw)?;
    let tick = tick(&ctx, &raw)?;
    let backend = backend(&ctx, &raw)?;
    let servers = servers(&ctx, &raw, backend)?;
    let (check, expect) = check_and_expect(&ctx, &raw)?;
    let require = labels(&ctx, raw.require.as_ref(), "require")?;
    let forbid = labels(&ctx, raw.forbid.as_ref(), "forbid")?;
    let lock = lock_settings(&ctx, &raw)?;
    let latency = pair(
        &ctx,
        raw.network.latency,
        (ms(1), ms(5)),
        "network latency",
        Some(0..0),
    )?;
    let clients = clients(&ctx, &raw.clients)?;
    let faults = faults(&ctx, &raw, duration, &clients, servers)?;
    faults_fit(&ctx, &raw, &faults, backend)?;
    Ok(Scenario {
        file: file.to_path_buf(),
        name: raw.name,
        description: raw.description.trim().to_owned(),
        duration,
        tick,
        backend,
        servers,
        check,
        expect,
        require,
        forbid,
        lock,
        latency,
        fencing: raw.storage.fencing.unwrap_or(true),
        quarantine: raw.redis.quarantine.map(|d| d.0),
        command_timeout: raw.redis.command_timeout.map(|d| d.0),
        detect_failover: raw.redis.detect_failover.unwrap_or(true),
        liveness_bound: raw.liveness.bound.map(|d| d.0),
        settle: raw.liveness.settle.map(|d| d.0),
        clients,
        faults,
        #[cfg(robit_mutants)]
        script_edits: Vec::new(),
    })
}

/// A name that is not empty, and the run's length: more than zero, at most an hour.
fn name_and_duration(ctx: &Ctx<'_>, raw: &RawScenario) -> Result<Duration, ScenarioError> {
    if raw.name.trim().is_empty() {
        return Err(ctx.error(Some(0..0), "`name` must not be empty"));
    }
    let duration = raw.duration.0;
    if duration.is_zero() || duration > MAX_DURATION {
        return Err(ctx.error(
            Some(0..0),
            "`duration` must be more than zero and at most 1h",
        ));
    }
    Ok(duration)
}

/// `tick`: the simulation's step, between [`MIN_TICK`] and [`MAX_TICK`].
fn tick(ctx: &Ctx<'_>, raw: &RawScenario) -> Result<Duration, ScenarioError> {
    match &raw.tick {
        None => Ok(DEFAULT_TICK),
        Some(tick) if (MIN_TICK..=MAX_TICK).contains(&tick.get_ref().0) => Ok(tick.get_ref().0),
        Some(tick) => Err(ctx.error(
            Some(tick.span()),
            format!("`tick` must be between {MIN_TICK:?} and {MAX_TICK:?}"),
        )),
    }
}

/// `backend`: `redis` (the default), `redlock` or `local`.
fn backend(ctx: &Ctx<'_>, raw: &RawScenario) -> Result<Backend, ScenarioError> {
    match raw
        .backend
        .as_ref()
        .map(|b| (b.get_ref().as_str(), b.span()))
    {
        None | Some(("redis", _)) => Ok(Backend::Redis),
        Some(("local", _)) => Ok(Backend::Local),
        Some(("redlock", _)) => Ok(Backend::Redlock),
        Some((other, span)) => Err(ctx.error(
            Some(span),
            format!("unknown backend {other:?}: expected \"redis\", \"redlock\" or \"local\""),
        )),
    }
}

/// `check` (every promise by default) and `expect` (none by default), each sorted and
/// without repeats; a promise expected broken must be checked.
fn check_and_expect(
    ctx: &Ctx<'_>,
    raw: &RawScenario,
) -> Result<(Vec<Promise>, Vec<Promise>), ScenarioError> {
    let check = promises(ctx, raw.check.as_ref(), &Promise::ALL)?;
    let expect = promises(ctx, raw.expect.as_ref(), &[])?;
    if let Some(missing) = expect.iter().find(|promise| !check.contains(promise)) {
        return Err(ctx.error(
            raw.expect.as_ref().map(Spanned::span),
            format!("expects {missing} to be broken, but `check` does not include it"),
        ));
    }
    Ok((check, expect))
}

/// A list of promises by name, sorted and without repeats; `default` if there is none.
fn promises(
    ctx: &Ctx<'_>,
    list: Option<&Spanned<Vec<String>>>,
    default: &[Promise],
) -> Result<Vec<Promise>, ScenarioError> {
    let Some(list) = list else {
        return Ok(default.to_vec());
    };
    let mut out = Vec::new();
    for name in list.get_ref() {
        let promise: Promise = name.parse().map_err(|error: crate::UnknownPromise| {
            ctx.error(Some(list.span()), error.to_string())
        })?;
        if !out.contains(&promise) {
            out.push(promise);
        }
    }
    out.sort();
    Ok(out)
}

/// Each `[[faults]]` entry, read against the run's length and the hosts it may name.
fn faults(
    ctx: &Ctx<'_>,
    raw: &RawScenario,
    duration: Duration,
    clients: &[Client],
    servers: usize,
) -> Result<Vec<super::Fault>, ScenarioError> {
    let names: Vec<&str> = clients.iter().map(|client| client.name.as_str()).collect();
    raw.faults
        .iter()
        .enumerate()
        .map(|(index, fault)| {
            super::fault::fault(ctx, index + 1, fault, duration, (&names, servers))
        })
        .collect()
}

/// `servers`: the quorum's size, for `backend = "redlock"` only (default 3).
fn servers(ctx: &Ctx<'_>, raw: &RawScenario, backend: Backend) -> Result<usize, ScenarioError> {
    let range = robit::redis::MIN_QUORUM_SERVERS..=MAX_SERVERS;
    match (&raw.servers, backend) {
        (None, Backend::Redlock) => Ok(robit::redis::MIN_QUORUM_SERVERS),
        (None, _) => Ok(1),
        (Some(servers), Backend::Redlock) => {
            let count = usize::try_from(*servers.get_ref()).unwrap_or(usize::MAX);
            if range.contains(&count) {
                Ok(count)
            } else {
                Err(ctx.error(
                    Some(servers.span()),
                    format!(
                        "`servers` must be between {} and {} for a quorum",
                        range.start(),
                        range.end()
                    ),
                ))
            }
        }
        (Some(servers), _) => Err(ctx.error(
            Some(servers.span()),
            "`servers` is the size of a quorum: it needs `backend = \"redlock\"`",
        )),
    }
}

/// Whether `name` is a quorum server's host name: `backend` and a number.
pub(crate) fn is_server_name(name: &str) -> bool {
    name.strip_prefix("backend")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// Each fault fits the scenario's backend and its other faults (a restart from a
/// snapshot needs one taken before it, and the simulated Redis, the one backend that
/// takes them).
fn faults_fit(
    ctx: &Ctx<'_>,
    raw: &RawScenario,
    faults: &[super::Fault],
    backend: Backend,
) -> Result<(), ScenarioError> {
    for (index, fault) in faults.iter().enumerate() {
        let Some(problem) = fault.action.kind().unfit(backend, fault.at, faults) else {
            continue;
        };
        let span = raw.faults.get(index).map(Spanned::span);
        return Err(ctx.error(span, format!("fault {}: {problem}", index + 1)));
    }
    Ok(())
}

fn lock_settings(ctx: &Ctx<'_>, raw: &RawScenario) -> Result<LockSettings, ScenarioError> {
    let lock = &raw.lock;
    let wait = match lock.wait.as_ref().map(|w| (w.get_ref().as_str(), w.span())) {
        None | Some(("forever", _)) => Wait::Forever,
        Some(("try", _)) => Wait::Try,
        Some((text, span)) => Wait::Timeout(humantime::parse_duration(text).map_err(|_| {
            ctx.error(
                Some(span),
                format!("invalid `wait` {text:?}: expected \"forever\", \"try\" or a duration like \"5s\""),
            )
        })?),
    };
    let settings = LockSettings {
        name: lock.name.clone().unwrap_or_else(|| "resource".to_owned()),
        ttl: lock.ttl.get_ref().0,
        renew_period: lock.renew_period.map(|d| d.0),
        renew_timeout: lock.renew_timeout.map(|d| d.0),
        drift_factor: lock
            .drift_factor
            .unwrap_or(robit::defaults::DEFAULT_DRIFT_FACTOR),
        safety_margin: lock.safety_margin.map(|d| d.0),
        wait,
        backoff: lock.backoff.map(|[base, max]| (base.0, max.0)),
        lock_delay: lock.lock_delay.map(|d| d.0),
        #[cfg(robit_mutants)]
        mutant: None,
    };
    // The library's own validation decides what a valid lock is.
    settings
        .builder(robit::LocalDriver::new())
        .build()
        .map_err(|error| ctx.error(Some(lock.ttl.span()), format!("[lock]: {error}")))?;
    Ok(settings)
}

impl LockSettings {
    /// A mutex builder with these settings over `driver`.
    pub(crate) fn builder(&self, driver: impl robit::Driver) -> robit::MutexBuilder {
        let mut builder = robit::Mutex::builder(self.name.as_str(), driver)
            .ttl(self.ttl)
            .drift_factor(self.drift_factor);
        if let Some(period) = self.renew_period {
            builder = builder.renew_period(period);
        }
        if let Some(timeout) = self.renew_timeout {
            builder = builder.renew_timeout(timeout);
        }
        if let Some(margin) = self.safety_margin {
            builder = builder.safety_margin(margin);
        }
        if let Some((base, max)) = self.backoff {
            builder = builder.backoff(robit::Backoff::new(base, max));
        }
        if let Some(delay) = self.lock_delay {
            builder = builder.lock_delay(delay);
        }
        #[cfg(robit_mutants)]
        if let Some(mutant) = self.mutant {
            builder = builder.mutant(mutant);
        }
        builder.wait(match self.wait {
            Wait::Forever => robit::Wait::Forever,
            Wait::Try => robit::Wait::Try,
            Wait::Timeout(limit) => robit::Wait::Timeout(limit),
        })
    }
}

/// A list of event labels (`require`, `forbid`), each checked against the history's.
fn labels(
    ctx: &Ctx<'_>,
    list: Option<&Spanned<Vec<String>>>,
    field: &str,
) -> Result<Vec<String>, ScenarioError> {
    let Some(list) = list else {
        return Ok(Vec::new());
    };
    for label in list.get_ref() {
        if !crate::history::LABELS.contains(&label.as_str()) {
            return Err(ctx.error(
                Some(list.span()),
                format!(
                    "`{field}`: unknown event {label:?}: expected one of {}",
                    crate::history::LABELS.join(", ")
                ),
            ));
        }
    }
    Ok(list.get_ref().clone())
}

//! Validating one `[[faults]]` entry.

use std::time::Duration;

use toml::Spanned;

use super::ctx::{Ctx, ms, pair};
use super::raw::RawFault;
use super::{Action, Fault, Target};
use crate::scenario::ScenarioError;

const KINDS: &str = "partition, partition-oneway, clog, latency, loss, drift, pause, crash, backend-crash, backend-restart";

pub(super) fn fault(
    ctx: &Ctx<'_>,
    index: usize,
    entry: &Spanned<RawFault>,
    duration: Duration,
    clients: &[&str],
) -> Result<Fault, ScenarioError> {
    let span = Some(entry.span());
    let raw = entry.get_ref();
    let kind = raw.kind.as_str();
    let fail =
        |message: String| ctx.error(span.clone(), format!("fault {index} ({kind}): {message}"));
    if raw.at.0 >= duration {
        return Err(fail(format!(
            "`at` {:?} is not inside the run ({duration:?})",
            raw.at.0
        )));
    }
    let target = |name: &str| -> Result<Target, ScenarioError> {
        Ok(match name {
            "holder" => Target::Holder,
            "clients" => Target::Clients,
            "backend" => Target::Backend,
            "storage" => Target::Storage,
            client if clients.contains(&client) => Target::Client(client.to_owned()),
            other => {
                return Err(fail(format!(
                    "unknown host {other:?}: expected a client ({}), \"holder\", \"clients\", \"backend\" or \"storage\"",
                    clients.join(", ")
                )));
            }
        })
    };
    let client_target = |name: Option<&String>| -> Result<Target, ScenarioError> {
        let name =
            name.ok_or_else(|| fail("needs `host`: a client, \"holder\" or \"clients\"".into()))?;
        match target(name)? {
            Target::Backend | Target::Storage if kind != "drift" => {
                Err(fail(format!("`host` must be a client, not {name:?}")))
            }
            found => Ok(found),
        }
    };
    let two = |between: Option<&Vec<String>>| -> Result<(Target, Target), ScenarioError> {
        match between.map(Vec::as_slice) {
            Some([a, b]) if a != b => Ok((target(a)?, target(b)?)),
            _ => Err(fail("needs `between`: two different hosts".into())),
        }
    };
    let (action, allowed): (Action, &[&str]) = match kind {
        "partition" => {
            let (a, b) = two(raw.between.as_ref())?;
            (Action::Partition(a, b), &["between"])
        }
        "clog" => {
            let (a, b) = two(raw.between.as_ref())?;
            (Action::Clog(a, b), &["between"])
        }
        "partition-oneway" => {
            let (Some(from), Some(to)) = (&raw.from, &raw.to) else {
                return Err(fail(
                    "needs `from` and `to`: the direction that drops messages".into(),
                ));
            };
            (
                Action::PartitionOneway {
                    from: target(from)?,
                    to: target(to)?,
                },
                &["from", "to"],
            )
        }
        "latency" => {
            let (low, high) = pair(ctx, raw.latency, (ms(0), ms(0)), "`latency`", span.clone())?;
            if raw.latency.is_none() {
                return Err(fail("needs `latency`: [low, high]".into()));
            }
            (Action::Latency(low, high), &["latency"])
        }
        "loss" => match raw.rate {
            Some(rate) if (0.0..=1.0).contains(&rate) => (Action::Loss(rate), &["rate"]),
            _ => return Err(fail("needs `rate`: a probability between 0 and 1".into())),
        },
        "drift" => match raw.drift {
            Some(drift) if drift.is_finite() && drift > -1.0 => (
                Action::Drift(client_target(raw.host.as_ref())?, drift),
                &["host", "drift"],
            ),
            _ => {
                return Err(fail(
                    "needs `drift`: a number above -1 (0.01 is 1% fast)".into(),
                ));
            }
        },
        "pause" => {
            if raw.length.is_none() {
                return Err(fail("needs `for`: how long the host stays paused".into()));
            }
            (Action::Pause(client_target(raw.host.as_ref())?), &["host"])
        }
        "crash" => (Action::Crash(client_target(raw.host.as_ref())?), &["host"]),
        "backend-crash" => (
            Action::BackendCrash {
                lose_state: raw.lose_state.unwrap_or(false),
            },
            &["lose_state"],
        ),
        "backend-restart" => {
            if raw.length.is_some() {
                return Err(fail(
                    "a restart is instant: use backend-crash with `for` for downtime".into(),
                ));
            }
            (
                Action::BackendRestart {
                    lose_state: raw.lose_state.unwrap_or(false),
                },
                &["lose_state"],
            )
        }
        other => {
            return Err(fail(format!(
                "unknown kind {other:?}: expected one of {KINDS}"
            )));
        }
    };
    let given = [
        ("between", raw.between.is_some()),
        ("from", raw.from.is_some()),
        ("to", raw.to.is_some()),
        ("host", raw.host.is_some()),
        ("latency", raw.latency.is_some()),
        ("rate", raw.rate.is_some()),
        ("drift", raw.drift.is_some()),
        ("lose_state", raw.lose_state.is_some()),
    ];
    if let Some((field, _)) = given
        .iter()
        .find(|(field, set)| *set && !allowed.contains(field))
    {
        return Err(fail(format!("`{field}` does not apply to this kind")));
    }
    Ok(Fault {
        at: raw.at.0,
        length: raw.length.map(|d| d.0),
        action,
    })
}

//! Validating one `[[faults]]` entry.
//!
//! serde reads the entry's kind and that kind's fields ([`RawFault`]): an unknown kind, a
//! missing field or one that does not apply to the kind is refused there, and worded
//! here. What needs the rest of the scenario — a host's name, the run's length, two
//! different hosts, a value's range — is checked here after.

use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::Fault;
use super::ctx::Ctx;
use super::hosts::Hosts;
use super::raw::RawEntry;
use super::toml_table::{self, Problem};
use crate::faults::{Invalid, Parse, RawFault};
use crate::scenario::ScenarioError;

/// Fault number `index` (from 1), checked against the run's `duration` and `clients`.
pub(super) fn fault(
    ctx: &Ctx<'_>,
    index: usize,
    entry: &Spanned<RawEntry>,
    duration: Duration,
    (clients, servers): (&[&str], usize),
) -> Result<Fault, ScenarioError> {
    let span = Some(entry.span());
    let entry = entry.get_ref();
    if let Some(kind) = entry.get("kind")
        && !kind.get_ref().is_str()
    {
        let message = format!(
            "fault {index}: `kind` must be one of {}",
            kinds().join(", ")
        );
        return Err(ctx.error(Some(kind.span()), message));
    }
    let kind = entry.get("kind").and_then(|kind| kind.get_ref().as_str());
    let label = match kind {
        Some(kind) => format!("fault {index} ({kind})"),
        None => format!("fault {index}"),
    };
    let fail = |message: String| ctx.error(span.clone(), format!("{label}: {message}"));
    let raw: RawFault = toml_table::read(unspanned(entry)).map_err(|problem| {
        let at = culprit(entry, &problem).or_else(|| span.clone());
        let message = explain(problem, kind.unwrap_or_default());
        ctx.error(at, format!("{label}: {message}"))
    })?;
    let (at, length) = raw.timing();
    let when_held = raw.when_held();
    if at >= duration {
        return Err(fail(format!(
            "`at` {at:?} is not inside the run ({duration:?})"
        )));
    }
    let hosts = Hosts { clients, servers };
    let on = Parse {
        hosts: &hosts,
        ctx,
        span: span.clone(),
    };
    let action = raw.parse(&on).map_err(|invalid| match invalid {
        Invalid::Fault(message) => fail(message),
        Invalid::Scenario(error) => error,
    })?;
    Ok(Fault {
        at,
        length,
        action,
        when_held,
    })
}

/// `entry` without the places of its values, as serde reads it.
fn unspanned(entry: &RawEntry) -> toml::Table {
    entry
        .iter()
        .map(|(key, value)| (key.clone(), value.get_ref().clone()))
        .collect()
}

/// Where the value is that `problem` is about, if it is about one value's content (a
/// wrong type, a duration that does not parse). serde reads a tagged entry whole before
/// it picks the kind, so its error does not say which field it came from: each field is
/// read again, alone with the kind, and the one that fails the same way is the one.
fn culprit(entry: &RawEntry, problem: &Problem) -> Option<Range<usize>> {
    match problem {
        // A field no kind takes (a typo, most likely) is pointed at; one that belongs to
        // another kind is the fault's mistake, reported at the fault.
        Problem::UnknownField(field, _) if !known(field) => {
            return entry.get(field).map(Spanned::span);
        }
        Problem::UnknownField(..) => return None,
        Problem::Other(_) => {}
        Problem::UnknownVariant(_, ["held"]) => {
            return entry.get("when").map(Spanned::span);
        }
        Problem::UnknownVariant(..) | Problem::MissingField(_) => return None,
    }
    let kind = entry.get("kind")?;
    entry
        .iter()
        .filter(|(key, _)| key.as_str() != "kind")
        .find_map(|(key, value)| {
            let alone = RawEntry::from([
                ("kind".to_owned(), kind.clone()),
                (key.clone(), value.clone()),
            ]);
            match toml_table::read::<RawFault>(unspanned(&alone)) {
                Err(Problem::Other(_)) => Some(value.span()),
                _ => None,
            }
        })
}

/// What serde found wrong with a fault of kind `kind`, in the scenario's words.
fn explain(problem: Problem, kind: &str) -> String {
    match problem {
        // The only other field with a fixed set of values.
        Problem::UnknownVariant(given, ["held"]) => {
            format!("`when` must be \"held\" (wait for a holder), not {given:?}")
        }
        Problem::UnknownVariant(given, kinds) => {
            format!(
                "unknown kind {given:?}: expected one of {}",
                kinds.join(", ")
            )
        }
        Problem::UnknownField(field, takes) => {
            if let Some(hint) = RawFault::misplaced(kind, &field) {
                return hint.to_owned();
            }
            let takes = std::iter::once(&"kind")
                .chain(takes)
                .map(|field| format!("`{field}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if known(&field) {
                format!("`{field}` does not apply to this kind: a {kind} fault takes {takes}")
            } else {
                format!("unknown field `{field}`: a {kind} fault takes {takes}")
            }
        }
        Problem::MissingField(field) => needs(field),
        Problem::Other(message) => message,
    }
}

/// The kinds of fault there are, in the documented order: serde's own list, so that it
/// cannot fall out of step with [`RawFault`].
fn kinds() -> &'static [&'static str] {
    let probe = toml::Table::from_iter([("kind".to_owned(), toml::Value::from(""))]);
    match toml_table::read::<RawFault>(probe) {
        Err(Problem::UnknownVariant(_, kinds)) => kinds,
        _ => &[],
    }
}

/// Whether some kind of fault takes `field`.
fn known(field: &str) -> bool {
    kinds().iter().any(|kind| fields_of(kind).contains(&field))
}

/// The fields a fault of `kind` takes besides `kind`: serde's own list, as it reports
/// a field the kind does not take.
fn fields_of(kind: &str) -> &'static [&'static str] {
    let probe = toml::Table::from_iter([
        ("kind".to_owned(), toml::Value::from(kind)),
        ("\u{0}".to_owned(), toml::Value::from(true)),
    ]);
    match toml_table::read::<RawFault>(probe) {
        Err(Problem::UnknownField(_, fields)) => fields,
        _ => &[],
    }
}

/// A field that is missing, or whose value cannot be used: what it should be.
pub(crate) fn needs(field: &str) -> String {
    let what = match field {
        "between" => "`between`: two different hosts",
        "from" | "to" => "`from` and `to`: the direction that drops messages",
        "host" => "`host`: a client, \"holder\" or \"clients\"",
        "latency" => "`latency`: [low, high]",
        "rate" => "`rate`: a probability between 0 and 1",
        "drift" => "`drift`: a number above -1 (0.01 is 1% fast)",
        "for" => "`for`: how long the host stays paused",
        other => return format!("missing field `{other}`"),
    };
    format!("needs {what}")
}

#[cfg(test)]
mod tests {
    use crate::Scenario;

    fn error(fault: &str) -> String {
        let text = format!(
            "name = \"f\"\nduration = \"10s\"\n[lock]\nttl = \"1s\"\n\
             [[clients]]\nname = \"c\"\nhold = [\"1ms\", \"2ms\"]\n\
             [[faults]]\nat = \"1s\"\n{fault}"
        );
        Scenario::parse("f.toml", &text)
            .expect_err("the fault is invalid")
            .to_string()
    }

    #[test]
    fn an_unknown_kind_lists_every_kind_in_the_documented_order() {
        assert_eq!(
            error("kind = \"meteor\"\n"),
            "f.toml:8:1: fault 1 (meteor): unknown kind \"meteor\": expected one of partition, \
             partition-oneway, clog, latency, loss, drift, pause, crash, backend-crash, \
             backend-restart, backend-snapshot, backend-failover"
        );
    }

    #[test]
    fn missing_and_inapplicable_fields_are_named_with_the_fault_and_its_kind() {
        assert_eq!(
            error("kind = \"pause\"\nhost = \"c\"\n"),
            "f.toml:8:1: fault 1 (pause): needs `for`: how long the host stays paused"
        );
        assert_eq!(
            error("kind = \"backend-restart\"\nfor = \"1s\"\n"),
            "f.toml:8:1: fault 1 (backend-restart): a restart is instant: use backend-crash \
             with `for` for downtime"
        );
        assert_eq!(
            error("kind = \"crash\"\nhost = \"c\"\nrate = 0.5\n"),
            "f.toml:8:1: fault 1 (crash): `rate` does not apply to this kind: a crash fault \
             takes `kind`, `at`, `for`, `host`"
        );
    }

    #[test]
    fn a_field_no_kind_takes_is_pointed_at_with_the_fields_the_kind_takes() {
        assert_eq!(
            error("kind = \"pause\"\nhots = \"c\"\nfor = \"1s\"\n"),
            "f.toml:11:8: fault 1 (pause): unknown field `hots`: a pause fault takes `kind`, \
             `at`, `for`, `host`"
        );
    }

    #[test]
    fn a_kind_that_is_not_a_string_is_pointed_at_with_the_kinds() {
        let message = error("kind = 3\n");
        assert!(
            message.starts_with("f.toml:10:8: fault 1: `kind` must be one of partition, "),
            "{message}"
        );
    }
}

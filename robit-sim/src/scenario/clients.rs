//! The `[[clients]]` entries, validated: each client's name, hold and think times, clock
//! drift and mutexes, and the clients an entry's `count` makes.

use std::collections::BTreeSet;
use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::ctx::{Ctx, ms, pair};
use super::load::MAX_DURATION;
use super::raw::RawClient;
use super::{Client, ScenarioError};

/// The most clients in one scenario.
const MAX_CLIENTS: usize = 200;
/// The most mutexes one client host may run over its driver.
const MAX_MUTEXES: u32 = 16;
/// Host names a client may not take: fault targets use them.
const RESERVED: [&str; 5] = ["holder", "clients", "backend", "storage", "world"];

pub(super) fn clients(
    ctx: &Ctx<'_>,
    raw: &[Spanned<RawClient>],
) -> Result<Vec<Client>, ScenarioError> {
    if raw.is_empty() {
        return Err(ctx.error(
            Some(0..0),
            "a scenario needs at least one [[clients]] entry",
        ));
    }
    let mut out: Vec<Client> = Vec::new();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    for entry in raw {
        let span = Some(entry.span());
        let client = entry.get_ref();
        let template = client_entry(ctx, client, span.clone())?;
        let count = count(ctx, client.count, out.len(), span.clone())?;
        for n in 1..=count {
            let name = match client.count {
                None => client.name.clone(),
                Some(_) => format!("{}{n}", client.name),
            };
            if !taken.insert(name.clone()) {
                return Err(ctx.error(span, format!("two clients are named {name:?}")));
            }
            out.push(Client {
                name,
                ..template.clone()
            });
        }
    }
    Ok(out)
}

/// One `[[clients]]` entry, validated, as the client it makes (named as the entry is):
/// the clients of a `count` are copies of it, each with a name of its own.
fn client_entry(
    ctx: &Ctx<'_>,
    client: &RawClient,
    span: Option<Range<usize>>,
) -> Result<Client, ScenarioError> {
    client_name(ctx, &client.name, span.clone())?;
    let hold = pair(
        ctx,
        Some(client.hold),
        (ms(0), ms(0)),
        "`hold`",
        span.clone(),
    )?;
    if hold.1.is_zero() {
        return Err(ctx.error(span, "`hold` must allow a hold longer than zero"));
    }
    let think = pair(ctx, client.think, (ms(0), ms(50)), "`think`", span.clone())?;
    let start = client.start.map_or(Duration::ZERO, |d| d.0);
    if hold.1 > MAX_DURATION || think.1 > MAX_DURATION || start > MAX_DURATION {
        return Err(ctx.error(span, "`hold`, `think` and `start` must each be at most 1h"));
    }
    let drift = client.drift.unwrap_or(0.0);
    if !drift.is_finite() || drift <= -1.0 {
        return Err(ctx.error(span, "`drift` must be a number above -1 (0.01 is 1% fast)"));
    }
    let mutexes = match client.mutexes {
        None => 1,
        Some(mutexes @ 1..=MAX_MUTEXES) => mutexes,
        Some(_) => {
            return Err(ctx.error(
                span,
                format!("`mutexes` must be between 1 and {MAX_MUTEXES}"),
            ));
        }
    };
    Ok(Client {
        name: client.name.clone(),
        start,
        hold,
        think,
        writes: client.writes.unwrap_or(2),
        drift,
        mutexes,
        heed_jeopardy: client.heed_jeopardy.unwrap_or(false),
    })
}

/// A client's name: letters, digits, `-` and `_`, and not a name fault targets use.
fn client_name(ctx: &Ctx<'_>, name: &str, span: Option<Range<usize>>) -> Result<(), ScenarioError> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid || RESERVED.contains(&name) || name.starts_with("backend") {
        return Err(ctx.error(
            span,
            format!(
                "client name {name:?}: expected letters, digits, '-' or '_', none of {RESERVED:?}, \
                 and not starting with \"backend\""
            ),
        ));
    }
    Ok(())
}

/// How many clients an entry makes (`count`, 1 if it has none), within the room the
/// `before` clients of earlier entries leave.
fn count(
    ctx: &Ctx<'_>,
    count: Option<u32>,
    before: usize,
    span: Option<Range<usize>>,
) -> Result<usize, ScenarioError> {
    // Check the count against the room left before expanding it: a count of four
    // billion must be an error, not an attempt to allocate four billion names.
    let count = match count {
        None => 1,
        Some(0) => return Err(ctx.error(span, "`count` must be at least 1")),
        Some(count) => count as usize,
    };
    if count > MAX_CLIENTS - before {
        return Err(ctx.error(
            span,
            format!(
                "at most {MAX_CLIENTS} clients in a scenario; this entry would make {}",
                before.saturating_add(count)
            ),
        ));
    }
    Ok(count)
}

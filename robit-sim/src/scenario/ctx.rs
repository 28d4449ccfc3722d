//! What validating a scenario needs throughout: [`Ctx`], which turns a span of the text
//! into an error with its line and column, and the helpers for durations and ranges.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use super::ScenarioError;
use super::raw::Dur;

/// The scenario's file and text, for errors that point into it.
pub(crate) struct Ctx<'a> {
    pub(super) file: &'a Path,
    pub(super) text: &'a str,
}

impl Ctx<'_> {
    pub(super) fn error(
        &self,
        span: Option<Range<usize>>,
        message: impl Into<String>,
    ) -> ScenarioError {
        let offset = span.map_or(0, |span| span.start).min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |at| at + 1) + 1;
        ScenarioError::Invalid {
            file: self.file.to_path_buf(),
            line,
            column,
            message: message.into(),
        }
    }
}

pub(crate) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub(crate) fn pair(
    ctx: &Ctx<'_>,
    value: Option<[Dur; 2]>,
    default: (Duration, Duration),
    what: &str,
    span: Option<Range<usize>>,
) -> Result<(Duration, Duration), ScenarioError> {
    let Some([low, high]) = value else {
        return Ok(default);
    };
    if low.0 > high.0 {
        return Err(ctx.error(
            span,
            format!(
                "{what}: the range [{:?}, {:?}] is reversed; write [low, high]",
                low.0, high.0
            ),
        ));
    }
    Ok((low.0, high.0))
}

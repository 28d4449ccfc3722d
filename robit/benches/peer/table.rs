//! Reporting: aligned Markdown tables, each figure of robit over the peer's.

use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub(crate) enum Unit {
    /// Per second, whole.
    Rate,
    /// Two decimals.
    Fraction,
    /// Seconds, shown in ms.
    Millis,
    /// Seconds, shown in µs.
    Micros,
    /// A whole count.
    Count,
}

impl Unit {
    fn show(self, value: f64) -> String {
        if !value.is_finite() {
            return "—".to_owned();
        }
        match self {
            Self::Rate | Self::Count => format!("{value:.0}"),
            Self::Fraction => format!("{value:.2}"),
            Self::Millis => format!("{:.3} ms", value * 1e3),
            Self::Micros => format!("{:.1} µs", value * 1e6),
        }
    }
}

/// A ratio with two significant digits at least, or a dash where it has no meaning.
fn show_ratio(ratio: f64) -> String {
    if !ratio.is_finite() {
        "—".to_owned()
    } else if ratio >= 10.0 {
        format!("{ratio:.0}×")
    } else if ratio >= 0.1 || ratio == 0.0 {
        format!("{ratio:.2}×")
    } else {
        let decimals = (1.0 - ratio.log10().floor()) as usize;
        format!("{ratio:.decimals$}×")
    }
}

pub(crate) struct Table {
    columns: Vec<(&'static str, Unit)>,
    rows: Vec<(String, Vec<f64>)>,
}

impl Table {
    pub(crate) fn new(columns: &[(&'static str, Unit)]) -> Self {
        Self {
            columns: columns.to_vec(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, label: impl Into<String>, values: Vec<f64>) {
        assert_eq!(values.len(), self.columns.len());
        self.rows.push((label.into(), values));
    }

    /// Prints the rows, then for each `(ours, theirs, label)` a row of ratios.
    pub(crate) fn print(&self, ratios: &[(usize, usize, String)]) {
        let mut lines: Vec<Vec<String>> = vec![
            std::iter::once(String::new())
                .chain(self.columns.iter().map(|(name, _)| (*name).to_owned()))
                .collect(),
        ];
        for (label, values) in &self.rows {
            lines.push(
                std::iter::once(label.clone())
                    .chain(
                        values
                            .iter()
                            .zip(&self.columns)
                            .map(|(value, (_, unit))| unit.show(*value)),
                    )
                    .collect(),
            );
        }
        for (ours, theirs, label) in ratios {
            let (ours, theirs) = (&self.rows[*ours].1, &self.rows[*theirs].1);
            lines.push(
                std::iter::once(format!("**{label}**"))
                    .chain(ours.iter().zip(theirs).map(|(a, b)| show_ratio(a / b)))
                    .collect(),
            );
        }
        let widths: Vec<usize> = (0..lines[0].len())
            .map(|column| {
                lines
                    .iter()
                    .map(|line| line[column].chars().count())
                    .max()
                    .unwrap()
                    .max(3)
            })
            .collect();
        let print_line = |line: &[String]| {
            let cells: Vec<String> = line
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(column, (cell, &width))| {
                    let pad = " ".repeat(width - cell.chars().count());
                    if column == 0 {
                        format!("{cell}{pad}")
                    } else {
                        format!("{pad}{cell}")
                    }
                })
                .collect();
            println!("| {} |", cells.join(" | "));
        };
        print_line(&lines[0]);
        let rule: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(column, &width)| {
                if column == 0 {
                    "-".repeat(width + 2)
                } else {
                    format!("{}:", "-".repeat(width + 1))
                }
            })
            .collect();
        println!("|{}|", rule.join("|"));
        for line in &lines[1..] {
            print_line(line);
        }
    }
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank].as_secs_f64()
}

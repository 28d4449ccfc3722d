//! Printing: Markdown tables with a row per figure and a column per library, then
//! columns of robit's figure over a peer's.

use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub(crate) enum Unit {
    /// Whole.
    Count,
    /// Two decimals.
    Fraction,
    /// Seconds, shown in ms.
    Millis,
    /// Seconds, shown in µs.
    Micros,
    /// 1 for yes, 0 for no.
    YesNo,
    /// Bytes, whole.
    Bytes,
}

impl Unit {
    fn show(self, value: f64) -> String {
        if !value.is_finite() {
            return "—".to_owned();
        }
        match self {
            Self::Count => format!("{value:.0}"),
            Self::Fraction => format!("{value:.2}"),
            Self::Millis => format!("{:.3} ms", value * 1e3),
            Self::Micros => format!("{:.1} µs", value * 1e6),
            Self::YesNo if value > 0.0 => "yes".to_owned(),
            Self::YesNo => "no".to_owned(),
            Self::Bytes => format!("{value:.0} B"),
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
    figures: Vec<(&'static str, Unit)>,
    /// A library's label and its figures, in the order of `figures`.
    columns: Vec<(String, Vec<f64>)>,
}

impl Table {
    pub(crate) fn new(figures: &[(&'static str, Unit)]) -> Self {
        Self {
            figures: figures.to_vec(),
            columns: Vec::new(),
        }
    }

    pub(crate) fn column(&mut self, label: impl Into<String>, values: Vec<f64>) {
        assert_eq!(values.len(), self.figures.len());
        self.columns.push((label.into(), values));
    }

    /// Prints the table, with a column of ratios for each `(ours, theirs)` pair of
    /// column indices.
    pub(crate) fn print(&self, ratios: &[(usize, usize)]) {
        let mut header = vec![String::new()];
        header.extend(self.columns.iter().map(|(label, _)| label.clone()));
        header.extend(ratios.iter().map(|&(ours, theirs)| {
            format!("{} / {}", self.columns[ours].0, self.columns[theirs].0)
        }));
        let mut lines = vec![header];
        for (row, (figure, unit)) in self.figures.iter().enumerate() {
            let mut line = vec![(*figure).to_owned()];
            line.extend(
                self.columns
                    .iter()
                    .map(|(_, values)| unit.show(values[row])),
            );
            line.extend(ratios.iter().map(|&(ours, theirs)| match unit {
                Unit::YesNo => "—".to_owned(),
                _ => show_ratio(self.columns[ours].1[row] / self.columns[theirs].1[row]),
            }));
            lines.push(line);
        }
        print_aligned(&lines);
    }
}

/// Prints `lines` as a Markdown table, the first line the header: the first column
/// aligned left, the others right.
fn print_aligned(lines: &[Vec<String>]) {
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

/// The `p` quantile of `sorted` (nearest rank), in s; NaN if empty.
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank].as_secs_f64()
}

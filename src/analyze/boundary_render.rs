//! The boundary table ([`boundary`](super::boundary)) as a format-free `Table` (recommend.md,
//! summary.md and report.html render it each in their own way) and as sentences.

use super::boundary::{Axes, Boundary, Point, Span};
use crate::markup::table::{Cell, Table};
use crate::results::status::Status;

/// What the table's columns mean, in one paragraph.
pub fn explanation(along: &str) -> String {
    format!(
        "One row per line: every other parameter, the solver and the env combination held fixed, {along} \
         going up. `ok up to` is the largest {along} that was ok below the first failure, `fails from` the \
         smallest {along} that failed (hang, crash, interrupted, mismatch, zeros, nonfinite, error, or \
         inferred-fail from a boundary search), with how it failed; `above` says whether every {along} \
         tested above it failed too (contiguous) or some were ok again (a window). A zip group (a channel \
         pair) is one column: its rows are categories, not numbers."
    )
}

/// A value as the table writes it, marked when a boundary search inferred it.
fn value(p: &Point) -> String {
    if p.status.is_inferred() {
        format!("{} (inferred)", p.text)
    } else {
        p.text.clone()
    }
}

fn span(s: &Span) -> String {
    if s.0 == s.1 {
        s.0.clone()
    } else {
        format!("{}–{}", s.0, s.1)
    }
}

fn spans(v: &[Span]) -> String {
    v.iter().map(span).collect::<Vec<_>>().join(", ")
}

/// `hang in compile`, or `mismatch` for a status without a phase.
pub fn how(status: Status, phase: &str) -> String {
    if phase.is_empty() || !matches!(status, Status::Hang | Status::Crash | Status::Interrupted) {
        status.name().to_string()
    } else {
        format!("{status} in {phase}")
    }
}

/// The failing statuses of a line: `hang in compile`, or with counts when there are several
/// (`hang in compile (5), crash in run (1)`); values a boundary search inferred are counted
/// (`hang in compile (1 run, 6 inferred)`).
pub fn failing_text(l: &Boundary) -> String {
    let f = l.failing();
    let inferred = |x: &super::boundary::Failing| {
        if x.inferred == 0 {
            None
        } else {
            Some(format!(
                "{} run, {} inferred",
                x.values - x.inferred,
                x.inferred
            ))
        }
    };
    match f.as_slice() {
        [] => "-".to_string(),
        [one] => match inferred(one) {
            None => how(one.status, &one.phase),
            Some(i) => format!("{} ({i})", how(one.status, &one.phase)),
        },
        many => many
            .iter()
            .map(|x| {
                let n = inferred(x).unwrap_or_else(|| x.values.to_string());
                format!("{} ({n})", how(x.status, &x.phase))
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Whether the failures above the boundary are contiguous, or where the windows are.
pub fn above_text(l: &Boundary) -> String {
    let Some(first) = l.fails_from() else {
        return "-".to_string();
    };
    let (fails, oks) = l.runs_above();
    if oks.is_empty() {
        let top = l.top().map_or(first.text.clone(), |t| t.text.clone());
        return if top == first.text {
            "contiguous (the largest value tested)".to_string()
        } else {
            format!("contiguous: every value up to {top} fails")
        };
    }
    let windows = if fails.len() == 1 {
        "window".to_string()
    } else {
        format!("{} windows", fails.len())
    };
    format!(
        "{windows}: fails {}; ok again {}",
        spans(&fails),
        spans(&oks)
    )
}

fn ok_up_to_text(l: &Boundary) -> String {
    match (l.ok_up_to(), l.fails_from()) {
        (Some(p), Some(_)) => value(p),
        (Some(p), None) => format!("{} (every value)", value(p)),
        (None, Some(_)) => "none (the smallest fails)".to_string(),
        (None, None) => "-".to_string(),
    }
}

fn fails_from_text(l: &Boundary) -> String {
    l.fails_from().map_or("never".to_string(), value)
}

/// Values the line has no answer for: `64 unsupported, 80 skipped`.
fn no_answer_text(l: &Boundary) -> String {
    let v = l.no_answer();
    if v.is_empty() {
        "-".to_string()
    } else {
        v.iter()
            .map(|(t, s)| format!("{t} {s}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Which of the optional columns a table shows.
pub struct Show<'a> {
    /// The env combination's label, when the table covers several combinations.
    pub env: Option<&'a dyn Fn(&str) -> String>,
    pub solver: bool,
}

impl Show<'_> {
    /// The columns a table of `lines` needs: env when they have several, solver likewise.
    pub fn for_lines<'a>(lines: &[Boundary], env: &'a dyn Fn(&str) -> String) -> Show<'a> {
        let several = |f: &dyn Fn(&Boundary) -> &str| {
            lines
                .iter()
                .map(f)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                > 1
        };
        Show {
            env: several(&|l| l.env.as_str()).then_some(env),
            solver: several(&|l| l.solver.as_str()),
        }
    }
}

/// The table of `lines`.
pub fn table(lines: &[Boundary], axes: &Axes, show: &Show) -> Table {
    let along = axes.along.as_deref().unwrap_or("size");
    let names: Vec<String> = axes.groups.iter().map(|g| Axes::group_name(g)).collect();
    let ok_col = format!("ok up to {along}");
    let fail_col = format!("fails from {along}");
    let mut cols: Vec<(&str, bool)> = Vec::new();
    if show.env.is_some() {
        cols.push(("combination", false));
    }
    if show.solver {
        cols.push(("solver", false));
    }
    cols.extend(names.iter().map(|n| (n.as_str(), false)));
    cols.extend([
        (ok_col.as_str(), true),
        (fail_col.as_str(), true),
        ("how it fails", false),
        ("above", false),
    ]);
    let unanswered = lines.iter().any(|l| !l.no_answer().is_empty());
    if unanswered {
        cols.push(("no answer (not in the columns before)", false));
    }
    let mut t = Table::new(&cols);
    for l in lines {
        let mut cells = Vec::new();
        if let Some(label) = show.env {
            cells.push(Cell::Code(label(&l.env)));
        }
        if show.solver {
            cells.push(Cell::text(l.solver.clone()));
        }
        cells.extend(l.group.iter().map(|g| Cell::text(g.clone())));
        cells.extend([
            Cell::Num(ok_up_to_text(l)),
            Cell::Num(fails_from_text(l)),
            Cell::text(failing_text(l)),
            Cell::text(above_text(l)),
        ]);
        if unanswered {
            cells.push(Cell::text(no_answer_text(l)));
        }
        t.push(cells);
    }
    t
}

/// The line's group as words: `c_in→c_out=16→32 dtype=f16` (with its solver when asked).
pub fn line_name(l: &Boundary, axes: &Axes, with_solver: bool) -> String {
    let mut parts: Vec<String> = axes
        .groups
        .iter()
        .zip(&l.group)
        .map(|(g, v)| format!("{}={v}", Axes::group_name(g)))
        .collect();
    if with_solver {
        parts.push(format!("solver {}", l.solver));
    }
    if parts.is_empty() {
        "the sweep".to_string()
    } else {
        parts.join(" ")
    }
}

/// One line in words: `c_in→c_out=16→32: hang in compile from h=40 (ok up to 32; contiguous:
/// every value up to 128 fails)`, or `ok at every h tested (16 to 128)`.
pub fn sentence(l: &Boundary, axes: &Axes, with_solver: bool) -> String {
    let along = axes.along.as_deref().unwrap_or("size");
    let name = line_name(l, axes, with_solver);
    match l.fails_from() {
        None => {
            let lo = l.points.iter().find(|p| p.status.predicts_ok());
            let hi = l.ok_up_to();
            match (lo, hi) {
                (Some(lo), Some(hi)) => format!(
                    "{name}: ok at every {along} tested ({} to {})",
                    lo.text, hi.text
                ),
                _ => format!("{name}: no {along} answered"),
            }
        }
        Some(first) => {
            let below = match l.ok_up_to() {
                Some(p) => format!("ok up to {}", value(p)),
                None => "no smaller value ok".to_string(),
            };
            format!(
                "{name}: {} from {along}={} ({below}; {})",
                failing_text(l),
                value(first),
                above_text(l)
            )
        }
    }
}

//! The report's tables, built once from the facts and written by each format (`html::table`,
//! `markdown::table`), so that report.html and summary.md can never say different things.

use super::facts::{self, Facts};
use crate::markup::shell;
use crate::results::rundata::Row;
use crate::results::status::Status;

/// One cell; each format decides how a kind looks (a badge, a code span, a folded log).
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Text(String),
    /// Right-aligned figures.
    Num(String),
    Status(Status),
    /// Text meant to be copied as it is: a unit id, a command.
    Code(String),
    /// An error: its first line shown, the worker's log tail (` | `-joined) folded below.
    Error(String),
    /// Text with more behind it (a case's full parameters) where the format can show it.
    Titled {
        text: String,
        title: String,
    },
}

pub struct Column {
    pub name: String,
    pub numeric: bool,
}

pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
    /// Per row: the unit it shows, so a format can make it a link target (`#u-<id>`).
    pub anchors: Vec<Option<String>>,
    /// Rows left out past a format's limit are counted in a note naming where they are.
    pub rest_in: &'static str,
}

impl Table {
    fn new(columns: &[(&str, bool)]) -> Table {
        Table {
            columns: columns
                .iter()
                .map(|(name, numeric)| Column {
                    name: name.to_string(),
                    numeric: *numeric,
                })
                .collect(),
            rows: Vec::new(),
            anchors: Vec::new(),
            rest_in: "results.csv",
        }
    }
}

/// The run directory as `rocsweep repro` should be given it, quoted for a shell: relative when
/// the run lies under the directory the report is made from (a repository's committed reports
/// then work in any clone), absolute otherwise.
fn repro_dir(f: &Facts) -> String {
    let abs = std::fs::canonicalize(&f.run.dir).unwrap_or_else(|_| f.run.dir.clone());
    let dir = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .ok()
        .and_then(|cwd| abs.strip_prefix(cwd).ok().map(|p| p.to_path_buf()))
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(abs);
    shell::quote(&dir.display().to_string())
}

/// Units that did not end ok: what, where, why, and how to get it again.
pub fn units(f: &Facts, rows: &[&Row]) -> Table {
    let multi_env = f.envs.len() > 1;
    let mut cols = vec![("status", false), ("phase", false), ("solver", false)];
    if multi_env {
        cols.push(("env", false));
    }
    cols.extend([("case", false), ("error", false), ("unit and repro", false)]);
    let mut t = Table::new(&cols);
    let dir = repro_dir(f);
    for r in rows {
        let mut row = vec![
            Cell::Status(r.status),
            Cell::Text(r.phase.clone()),
            Cell::Text(r.solver.clone()),
        ];
        if multi_env {
            row.push(Cell::Text(f.env_label(&r.env).to_string()));
        }
        row.push(Cell::Titled {
            text: f.case_label(r),
            title: format!("case {} · {}", r.case_id, r.params_text()),
        });
        row.push(Cell::Error(r.error.clone()));
        row.push(Cell::Code(format!(
            "rocsweep repro {dir} {}",
            shell::quote(&r.unit_id)
        )));
        t.rows.push(row);
        t.anchors.push(Some(r.unit_id.clone()));
    }
    t
}

/// The fastest solver per case: a table when the answer varies, one sentence when it does not
/// (a CPU run has one solver, and 72 rows all saying `im2col` tell nothing).
pub enum Fastest {
    None,
    Same(String),
    Table(Table),
}

pub fn fastest(f: &Facts) -> Fastest {
    let fastest = f.fastest();
    if fastest.is_empty() {
        return Fastest::None;
    }
    let multi_env = f.envs.len() > 1;
    let who = |r: &Row| {
        if multi_env {
            format!("{} · {}", r.solver, f.env_label(&r.env))
        } else {
            r.solver.clone()
        }
    };
    let first = who(fastest[0].best);
    if fastest.iter().all(|x| who(x.best) == first) {
        let choice = fastest.iter().filter(|x| x.timed > 1).count();
        let how = if choice == 0 {
            "the only timed solver".to_string()
        } else {
            format!("the fastest ({choice} of them with another solver timed)")
        };
        let mut cases = format!("{} case", fastest.len());
        if fastest.len() != 1 {
            cases.push('s');
        }
        return Fastest::Same(format!(
            "{first} is {how} in all {cases}; the times are in results.csv and the throughput plot."
        ));
    }
    let unit = f.metric.rate_unit();
    // With one timed unit per case there is no choice to show.
    let choice = fastest.iter().any(|x| x.timed > 1);
    let mut cols = vec![("case", false), ("fastest solver", false)];
    if multi_env {
        cols.push(("env", false));
    }
    cols.extend([("median ms", true), (unit, true)]);
    if choice {
        cols.extend([("next fastest", false), ("timed units", true)]);
    }
    let mut t = Table::new(&cols);
    for x in &fastest {
        let b = x.best;
        let mut row = vec![
            Cell::Titled {
                text: f.case_label(b),
                title: format!("case {}", b.case_id),
            },
            Cell::Text(b.solver.clone()),
        ];
        if multi_env {
            row.push(Cell::Text(f.env_label(&b.env).to_string()));
        }
        row.push(Cell::Num(b.median_ms.map(facts::ms).unwrap_or_default()));
        row.push(Cell::Num(
            f.metric
                .rate(b)
                .map(|v| format!("{v:.2}"))
                .unwrap_or_default(),
        ));
        if choice {
            let next = match (x.runner_up, b.median_ms) {
                (Some(n), Some(bm)) if bm > 0.0 => {
                    format!("{} ({:.2}x slower)", who(n), n.median_ms.unwrap_or(bm) / bm)
                }
                _ => "(only one)".to_string(),
            };
            row.push(Cell::Text(next));
            row.push(Cell::Num(x.timed.to_string()));
        }
        t.rows.push(row);
        t.anchors.push(None);
    }
    Fastest::Table(t)
}

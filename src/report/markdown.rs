//! summary.md: the report's facts as Markdown, for pasting into an issue or a pull request.

use super::facts::{self, Facts};
use super::table::{self, Cell, Fastest, Table};
use crate::error::CmdError;
use crate::results::rundata::Row;
use crate::results::status::Status;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Issue trackers cut long comments; the CSV has every row.
const MAX_TABLE_ROWS: usize = 200;
const MAX_ERROR_CHARS: usize = 200;

/// Plain text in a table cell or line (`markup::md`), and a code span (`markup::md_code`).
pub use crate::markup::{md as cell, md_code as code};

fn short_error(e: &str) -> String {
    let first = e.split(" | ").next().unwrap_or("");
    if first.chars().count() > MAX_ERROR_CHARS {
        first.chars().take(MAX_ERROR_CHARS).collect::<String>() + "…"
    } else {
        first.to_string()
    }
}

pub fn write(f: &Facts, dir: &Path, files: &[PathBuf]) -> Result<PathBuf, CmdError> {
    let path = dir.join("summary.md");
    std::fs::write(&path, render(f, files))
        .map_err(|e| CmdError::Failure(format!("{}: {e}", path.display())))?;
    Ok(path)
}

pub fn render(f: &Facts, files: &[PathBuf]) -> String {
    let m = &f.run.manifest;
    let mut s = String::new();
    let _ = writeln!(s, "# rocsweep report: {}\n", cell(&m.sweep.name));
    let _ = writeln!(
        s,
        "- sweep: {} (op {}), file {}",
        cell(&m.sweep.name),
        cell(&m.sweep.op),
        cell(&m.sweep.path)
    );
    let libs: Vec<String> = m
        .backend
        .versions
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let _ = writeln!(
        s,
        "- device: {} (backend {}; {})",
        cell(&f.device()),
        cell(&m.backend.backend),
        cell(&libs.join(", "))
    );
    let _ = writeln!(
        s,
        "- host: {} · {} · kernel {} · {}",
        cell(&m.host.hostname),
        cell(&m.host.os),
        cell(&m.host.kernel),
        cell(&m.host.cpu)
    );
    let _ = writeln!(
        s,
        "- rocsweep {} (commit {}), started {}, finished {}",
        cell(&m.rocsweep_version),
        cell(&m.git_commit),
        cell(&m.started_at),
        cell(m.finished_at.as_deref().unwrap_or("(not finished)"))
    );
    if let Some(stop) = &m.stopped {
        let _ = writeln!(s, "- stopped early: {}", cell(stop));
    }
    let _ = writeln!(s, "\nCounts: {}\n", facts::counts_line(&f.counts(None)));
    if f.rows().is_empty() {
        s.push_str("results.csv has no rows.\n");
    } else {
        counts_table(&mut s, f);
    }
    if let Some(lines) = f.model_lines() {
        s.push_str("\n## The model's calls\n\nWeighted by the calls (and traced time) the sweep's cases stand for; a case counts under the worst status of the solvers that ran it.\n\n");
        for (env, line) in lines {
            let _ = writeln!(s, "- {}: {}", cell(env), cell(line));
        }
    }
    let (failures, not_run): (Vec<&Row>, Vec<&Row>) =
        f.not_ok().into_iter().partition(|r| r.status.is_failure());
    s.push_str("\n## Failures\n\n");
    if failures.is_empty() {
        s.push_str("None.\n");
    } else {
        table(&mut s, &table::units(f, &failures));
    }
    s.push_str("\n## Not supported, skipped or interrupted\n\n");
    if not_run.is_empty() {
        s.push_str("None.\n");
    } else {
        table(&mut s, &table::units(f, &not_run));
    }
    if let Some(note) = f.inferred_note() {
        let _ = writeln!(s, "\n## Inferred\n\n{note}");
    }
    fastest_table(&mut s, f);
    let _ = writeln!(s, "\n## Files\n\nIn {}:\n", cell(&f.dir_text()));
    for p in files {
        if let Some(n) = p.file_name() {
            let _ = writeln!(s, "- {}", cell(&n.to_string_lossy()));
        }
    }
    s.push_str("- summary.md\n- results.csv, manifest.json (the data all of this is made from)\n");
    s
}

fn counts_table(s: &mut String, f: &Facts) {
    let present: Vec<(usize, Status)> = Status::ALL
        .iter()
        .copied()
        .enumerate()
        .filter(|(i, _)| f.counts(None)[*i] > 0)
        .collect();
    s.push_str("| env combination |");
    for (_, st) in &present {
        let _ = write!(s, " {st} |");
    }
    s.push_str(" total |\n|---|");
    for _ in &present {
        s.push_str("---:|");
    }
    s.push_str("---:|\n");
    for (key, label) in f.envs.iter().zip(&f.env_labels) {
        let c = f.counts(Some(key));
        let _ = write!(s, "| {} |", cell(label));
        for (i, _) in &present {
            let _ = write!(s, " {} |", c[*i]);
        }
        let _ = writeln!(s, " {} |", c.iter().sum::<u64>());
    }
}

/// Any of the report's tables (`table::Table`), capped at `MAX_TABLE_ROWS`.
fn table(s: &mut String, t: &Table) {
    s.push('|');
    for c in &t.columns {
        let _ = write!(s, " {} |", cell(&c.name));
    }
    s.push_str("\n|");
    for c in &t.columns {
        s.push_str(if c.numeric { "---:|" } else { "---|" });
    }
    s.push('\n');
    for row in t.rows.iter().take(MAX_TABLE_ROWS) {
        s.push('|');
        for c in row {
            let _ = write!(s, " {} |", table_cell(c));
        }
        s.push('\n');
    }
    if t.rows.len() > MAX_TABLE_ROWS {
        let _ = writeln!(
            s,
            "\n{} more in {}.",
            t.rows.len() - MAX_TABLE_ROWS,
            t.rest_in
        );
    }
}

fn table_cell(c: &Cell) -> String {
    match c {
        Cell::Text(t) | Cell::Num(t) => cell(t),
        Cell::Titled { text, .. } => cell(text),
        Cell::Status(st) => st.name().to_string(),
        Cell::Code(t) => code(t),
        Cell::Error(e) => cell(&short_error(e)),
    }
}

fn fastest_table(s: &mut String, f: &Facts) {
    s.push_str("\n## Fastest solver per case\n\n");
    match table::fastest(f) {
        Fastest::None => s.push_str("No timings: no unit ended ok with a median time.\n"),
        Fastest::Same(line) => {
            let _ = writeln!(s, "{}", cell(&line));
        }
        Fastest::Table(t) => table(s, &t),
    }
}

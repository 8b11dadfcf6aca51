//! summary.md: the report's facts as Markdown, for pasting into an issue or a pull request.

use super::facts::{self, Facts};
use super::table::{self, Fastest};
use crate::analyze::boundary_render;
use crate::error::CmdError;
use crate::markup::markdown::{escape as cell, table};
use crate::results::rundata::Row;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Issue trackers cut long comments; the CSV has every row.
const MAX_TABLE_ROWS: usize = 200;

pub fn write(f: &Facts, dir: &Path, files: &[PathBuf]) -> Result<PathBuf, CmdError> {
    let path = dir.join("summary.md");
    crate::results::atomic::write(&path, render(f, files))
        .map_err(|e| CmdError::Failure(format!("{}: {e}", path.display())))?;
    Ok(path)
}

pub fn render(f: &Facts, files: &[PathBuf]) -> String {
    let m = &f.run.manifest;
    let mut s = String::new();
    let _ = writeln!(s, "# rocsweep report: {}\n", cell(&m.sweep.name));
    s.push_str(&table(&table::run(f), MAX_TABLE_ROWS));
    let _ = writeln!(s, "\nCounts: {}\n", facts::counts_line(&f.counts(None)));
    if f.rows().is_empty() {
        s.push_str("results.csv has no rows.\n");
    } else {
        s.push_str(&table(&table::counts(f), MAX_TABLE_ROWS));
    }
    if let Some(lines) = f.model_lines() {
        s.push_str("\n## The model's calls\n\nWeighted by the calls (and traced time) the sweep's cases stand for; a case counts under the worst status of the solvers that ran it.\n\n");
        for (env, line) in lines {
            let _ = writeln!(s, "- {}: {}", cell(env), cell(line));
        }
    }
    boundaries(&mut s, f);
    which_layer(&mut s, f);
    let (failures, not_run): (Vec<&Row>, Vec<&Row>) =
        f.not_ok().into_iter().partition(|r| r.status.is_failure());
    s.push_str("\n## Failures\n\n");
    if failures.is_empty() {
        s.push_str("None.\n");
    } else {
        s.push_str(&table(
            &table::units(f, &failures, MAX_TABLE_ROWS),
            MAX_TABLE_ROWS,
        ));
    }
    s.push_str("\n## Not supported, skipped or interrupted\n\n");
    if not_run.is_empty() {
        s.push_str("None.\n");
    } else {
        s.push_str(&table(
            &table::units(f, &not_run, MAX_TABLE_ROWS),
            MAX_TABLE_ROWS,
        ));
    }
    if let Some(t) = table::unstable(f, MAX_TABLE_ROWS) {
        let _ = writeln!(
            s,
            "\n## Unstable between processes\n\n{}\n",
            table::UNSTABLE_NOTE
        );
        s.push_str(&table(&t, MAX_TABLE_ROWS));
    }
    if let Some(note) = f.inferred_note() {
        let _ = writeln!(s, "\n## Inferred\n\n{note}");
    }
    default_best(&mut s, f);
    fastest_table(&mut s, f);
    trees(&mut s, f);
    let _ = writeln!(s, "\n## Files\n\nIn {}:\n", cell(&f.dir_text()));
    for p in files {
        if let Some(n) = p.file_name() {
            let _ = writeln!(s, "- {}", cell(&n.to_string_lossy()));
        }
    }
    s.push_str("- summary.md\n- results.csv, manifest.json (the data all of this is made from)\n");
    s
}

/// The which-layer table, in a run over the PyTorch layer and a direct library.
fn which_layer(s: &mut String, f: &Facts) {
    let Some((counts, t, scripts)) = table::layers(f) else {
        return;
    };
    let _ = writeln!(
        s,
        "\n## Which layer fails\n\n**{counts}**\n\n{}\n",
        crate::analyze::layers::EXPLANATION
    );
    s.push_str(&table(&t, MAX_TABLE_ROWS));
    for (head, script) in scripts {
        let _ = writeln!(s, "\n### {}\n\n```python\n{script}```", cell(&head));
    }
}

/// Where each line starts failing along the ordered axis (when some line has two values).
fn boundaries(s: &mut String, f: &Facts) {
    let Some((along, t)) = f.boundary_table() else {
        return;
    };
    let t = match t {
        Ok(t) => t,
        Err(none) => {
            let _ = writeln!(s, "\n## Boundaries along {along}\n\n{none}");
            return;
        }
    };
    let _ = writeln!(
        s,
        "\n## Boundaries along {along}\n\n{}\n",
        boundary_render::explanation(&along)
    );
    s.push_str(&table(&t, MAX_TABLE_ROWS));
}

/// The library's default against its best solution per shape, where the run timed both.
fn default_best(s: &mut String, f: &Facts) {
    let Some((line, t)) = table::default_best(f, MAX_TABLE_ROWS) else {
        return;
    };
    let _ = writeln!(
        s,
        "\n## Default against best\n\n**{}**.\n\n{}\n",
        cell(&line),
        table::DEFAULT_BEST_NOTE
    );
    s.push_str(&table(&t, MAX_TABLE_ROWS));
}

fn fastest_table(s: &mut String, f: &Facts) {
    s.push_str("\n## Fastest solver per case\n\n");
    match table::fastest(f, MAX_TABLE_ROWS) {
        Fastest::None => s.push_str("No timings: no unit ended ok with a median time.\n"),
        Fastest::Same(line) => {
            let _ = writeln!(s, "{}", cell(&line));
        }
        Fastest::Table(t) => s.push_str(&table(&t, MAX_TABLE_ROWS)),
    }
}

/// Each ROCm tree of the run and the library files its workers mapped.
fn trees(s: &mut String, f: &Facts) {
    let groups = super::provenance::groups(&f.run.manifest);
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## ROCm trees\n\n{}", super::provenance::NOTE);
    for g in groups {
        let _ = writeln!(s, "\n{}\n", cell(&g.heading()));
        if !g.note.is_empty() {
            let _ = writeln!(s, "Note: {}\n", cell(&g.note));
        }
        s.push_str(&table(&g.table(), MAX_TABLE_ROWS));
    }
}

//! The report's tables, built once from the facts in the one table model (`markup::table`) and
//! written by each format (`html_table`, `markup::markdown::table`), so that report.html and
//! summary.md can never say different things.

use super::facts::{self, Facts};
use crate::markup::shell;
use crate::markup::table::{Cell, RowKind, Span, Table};
use crate::results::rundata::Row;
use crate::results::status::Status;

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

/// Units that did not end ok: what, where, why, and how to get it again; the first `limit`
/// of them, the rest counted.
pub fn units(f: &Facts, rows: &[&Row], limit: usize) -> Table {
    let multi_env = f.envs.len() > 1;
    let mut cols = vec![("status", false), ("phase", false), ("solver", false)];
    if multi_env {
        cols.push(("env", false));
    }
    cols.extend([("case", false), ("error", false), ("unit and repro", false)]);
    let mut t = Table::new(&cols);
    let dir = repro_dir(f);
    t.left_out = rows.len().saturating_sub(limit);
    for r in rows.iter().take(limit) {
        let mut row = vec![
            Cell::Status(r.status),
            Cell::Text(r.phase.to_string()),
            Cell::Text(r.solver.to_string()),
        ];
        if multi_env {
            row.push(Cell::Text(f.env_label(&r.env).to_string()));
        }
        row.push(Cell::Titled {
            text: f.case_label(r),
            title: format!("case {} · {}", r.case_id, r.params_text()),
        });
        row.push(Cell::Error(r.error.to_string()));
        row.push(Cell::Code(format!(
            "rocsweep repro {dir} {}",
            shell::quote(&r.unit_id)
        )));
        t.push_as(row, RowKind::Plain, Some(r.unit_id.to_string()));
    }
    t
}

/// `run --processes`: the units whose processes disagreed (status, output bits or the library's
/// choice), with what differed; None when the run has none (or was not run with it).
pub fn unstable(f: &Facts, limit: usize) -> Option<Table> {
    let rows: Vec<&Row> = f
        .rows()
        .iter()
        .filter(|r| r.stable.as_str() == "no")
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::new(&[
        ("solver", false),
        ("env", false),
        ("case", false),
        ("what differed between processes", false),
        ("unit", false),
    ]);
    t.left_out = rows.len().saturating_sub(limit);
    for r in rows.iter().take(limit) {
        t.push(vec![
            Cell::Text(r.solver.to_string()),
            Cell::Text(f.env_label(&r.env).to_string()),
            Cell::Titled {
                text: f.case_label(r),
                title: format!("case {} · {}", r.case_id, r.params_text()),
            },
            Cell::Error(r.unstable.to_string()),
            Cell::Code(r.unit_id.to_string()),
        ]);
    }
    Some(t)
}

/// What the unstable section says above its table.
pub const UNSTABLE_NOTE: &str = "Each unit ran in several fresh worker processes (`run --processes`); these gave different statuses, output bits or library choices. compare and recommend call them unstable, never faster or slower.";

/// Scripts listed under the which-layer table at most (the table itself goes on).
const MAX_LAYER_SCRIPTS: usize = 20;

/// The which-layer section: its verdicts counted, the table, and each failing pair's
/// stand-alone script (heading, script).
pub type Layers = (String, Table, Vec<(String, String)>);

/// The which-layer table (analyze/layers.rs) of a run over the PyTorch layer (`torch`) and
/// another backend, with the stand-alone Python script of each pair that fails somewhere
/// (heading, script); None for any other run.
pub fn layers(f: &Facts) -> Option<Layers> {
    use crate::analyze::layers::{self, Verdict};
    let pairs = layers::pairs(f.rows(), layers::PYTORCH_LAYER);
    if pairs.is_empty() {
        return None;
    }
    let multi_env = pairs.iter().any(|p| !p.env.is_empty());
    let t = layers::table(&pairs, &repro_dir(f), &|r| f.case_label(r), multi_env);
    let scripts = pairs
        .iter()
        .filter(|p| {
            matches!(
                p.verdict,
                Verdict::Library | Verdict::Pytorch | Verdict::LibraryOnly
            )
        })
        .filter_map(|p| {
            let row = p.any_row()?;
            let env = if p.env.is_empty() {
                String::new()
            } else {
                format!(" [{}]", p.env)
            };
            let head = format!("{}{env}: {}", f.case_label(row), p.verdict.name());
            Some((head, p.script()?))
        })
        .take(MAX_LAYER_SCRIPTS)
        .collect();
    Some((layers::verdict_counts(&pairs), t, scripts))
}

/// The fastest solver per case: a table when the answer varies, one sentence when it does not
/// (a CPU run has one solver, and 72 rows all saying `im2col` tell nothing).
pub enum Fastest {
    None,
    Same(String),
    Table(Table),
}

/// The fastest solver of each case: one sentence when it is the same everywhere, else a table
/// of the first `limit` cases, the rest counted.
pub fn fastest(f: &Facts, limit: usize) -> Fastest {
    let fastest = f.fastest();
    if fastest.is_empty() {
        return Fastest::None;
    }
    let multi_env = f.envs.len() > 1;
    let who = |r: &Row| {
        if multi_env {
            format!("{} · {}", r.solver, f.env_label(&r.env))
        } else {
            r.solver.to_string()
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
    t.left_out = fastest.len().saturating_sub(limit);
    for x in fastest.iter().take(limit) {
        let b = x.best;
        let mut row = vec![
            Cell::Titled {
                text: f.case_label(b),
                title: format!("case {}", b.case_id),
            },
            Cell::Text(b.solver.to_string()),
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
        t.push(row);
    }
    Fastest::Table(t)
}

/// What ran, where, from what, and how it ended: the facts at the top of both formats.
pub fn run(f: &Facts) -> Table {
    let m = &f.run.manifest;
    let mut t = Table::facts(&["", ""]);
    t.fact("sweep", vec![sweep_cell(f)]);
    t.fact("device", vec![Cell::text(f.device())]);
    t.fact("backend", vec![Cell::Text(backends_text(m))]);
    t.fact("libraries", vec![libraries_cell(m)]);
    let host = &m.host;
    t.fact(
        "host",
        vec![Cell::Text(format!(
            "{} · {} · kernel {} · {} · {} · {} logical CPUs · {:.1} GiB",
            host.hostname,
            host.os,
            host.kernel,
            host.arch,
            host.cpu,
            host.logical_cpus,
            host.memory_bytes as f64 / (1u64 << 30) as f64
        ))],
    );
    t.fact(
        "rocsweep",
        vec![Cell::Text(format!(
            "{} (commit {})",
            m.rocsweep_version, m.git_commit
        ))],
    );
    t.fact(
        "time (UTC)",
        vec![Cell::Text(format!(
            "started {} · finished {}",
            m.started_at,
            m.finished_at.as_deref().unwrap_or("(not finished)")
        ))],
    );
    t.fact("units", vec![Cell::Text(units_text(f))]);
    t.fact("env combinations", vec![envs_cell(f)]);
    if let Some(s) = &m.stopped {
        t.fact("stopped early", vec![Cell::text(s)]);
    }
    if !m.resumed.is_empty() {
        t.fact("resumed", vec![Cell::Text(m.resumed.join(", "))]);
    }
    // Quoted as a shell needs it, so that the line names the same files when pasted.
    let line: Vec<String> = m
        .command_line
        .iter()
        .map(|a| crate::markup::shell::quote(a))
        .collect();
    t.fact("command", vec![Cell::Code(line.join(" "))]);
    t
}

/// The run's backends: each one's first worker's info (`backends`, in a run of several), else
/// the one.
fn run_backends(m: &crate::results::manifest::Manifest) -> Vec<&crate::backend::BackendInfo> {
    if m.backends.is_empty() {
        vec![&m.backend]
    } else {
        m.backends.iter().collect()
    }
}

/// Every backend of the run, with what was missing where one was not available.
fn backends_text(m: &crate::results::manifest::Manifest) -> String {
    let names: Vec<String> = run_backends(m)
        .into_iter()
        .map(|b| match &b.missing {
            Some(missing) => format!("{} (not available: {missing})", b.backend),
            None => b.backend.clone(),
        })
        .collect();
    names.join(", ")
}

/// Each backend's own library versions: one line per backend where the run has several.
fn libraries_cell(m: &crate::results::manifest::Manifest) -> Cell {
    let all = run_backends(m);
    let mut spans = Vec::new();
    for (i, b) in all.iter().enumerate() {
        if i > 0 {
            spans.push(Span::Break);
        }
        let libs: Vec<String> = b.versions.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let libs = if libs.is_empty() {
            "(none recorded)".to_string()
        } else {
            libs.join(" · ")
        };
        spans.push(Span::Text(if all.len() > 1 {
            format!("{}: {libs}", b.backend)
        } else {
            libs
        }));
    }
    Cell::Spans(spans)
}

/// The sweep's name and op, its file, hash and the command line's overrides.
fn sweep_cell(f: &Facts) -> Cell {
    let m = &f.run.manifest;
    let mut spans = vec![Span::Text(format!("{} (op {})", m.sweep.name, m.sweep.op))];
    if !m.sweep.path.is_empty() {
        spans.push(Span::Text(" · ".into()));
        spans.push(Span::Code(m.sweep.path.clone()));
    }
    let sha: String = m.sweep.sha256.chars().take(16).collect();
    if !sha.is_empty() {
        spans.push(Span::Text(format!(" · sha256 {sha}")));
    }
    if !m.sweep.overrides.is_empty() {
        spans.push(Span::Text(" · overrides ".into()));
        spans.push(Span::Code(m.sweep.overrides.join(" ")));
    }
    Cell::Spans(spans)
}

/// Units planned and with a row, and what is missing or was dropped.
fn units_text(f: &Facts) -> String {
    let m = &f.run.manifest;
    let rows = f.rows().len() as u64;
    let mut units = format!("{} planned · {} with a row", m.units_planned, rows);
    if rows < m.units_planned {
        units.push_str(&format!(
            " · {} without a row (run incomplete; `rocsweep run --resume` continues it)",
            m.units_planned - rows
        ));
    }
    if m.invalid_combinations > 0 {
        units.push_str(&format!(
            " · {} invalid combinations dropped{}",
            m.invalid_combinations,
            m.invalid_example
                .as_deref()
                .map(|e| format!(" (e.g. {e})"))
                .unwrap_or_default()
        ));
    }
    units
}

fn envs_cell(f: &Facts) -> Cell {
    // One line per distinct env combination (several backends or trees repeat one); "none"
    // where the sweep sets no variables.
    let mut keys: Vec<String> = Vec::new();
    for c in &f.run.manifest.env_combos {
        let k = c.key();
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    if keys.iter().all(String::is_empty) {
        return Cell::text("none");
    }
    let mut spans = Vec::new();
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::Break);
        }
        spans.push(if k.is_empty() {
            Span::Text("(no variables)".into())
        } else {
            Span::Code(k)
        });
    }
    Cell::Spans(spans)
}

/// Units per status, over the run and per env combination when there are several; a status no
/// unit has is a faint row (a legend in the page, left out of the Markdown).
pub fn counts(f: &Facts) -> Table {
    let per_env = f.envs.len() > 1;
    let mut cols = vec![("status", false), ("all", true)];
    if per_env {
        cols.extend(f.env_labels.iter().map(|l| (l.as_str(), true)));
    }
    let mut t = Table::new(&cols);
    let all = f.counts(None);
    let by_env: Vec<[u64; Status::COUNT]> = if per_env {
        f.envs.iter().map(|e| f.counts(Some(e))).collect()
    } else {
        Vec::new()
    };
    for (i, s) in Status::ALL.iter().enumerate() {
        let mut row = vec![Cell::Legend(*s), Cell::num(all[i])];
        row.extend(by_env.iter().map(|c| Cell::num(c[i])));
        let kind = if all[i] == 0 {
            RowKind::Faint
        } else {
            RowKind::Plain
        };
        t.push_as(row, kind, None);
    }
    let mut total = vec![Cell::text("total"), Cell::num(all.iter().sum::<u64>())];
    total.extend(by_env.iter().map(|c| Cell::num(c.iter().sum::<u64>())));
    t.push_as(total, RowKind::Total, None);
    t
}

/// The library's default against its best named solution, per shape (issue 44): the sentence
/// the section leads with and the table, the shapes where the default loses most first; None
/// when no case has both a timed `default` and a timed named solution.
pub fn default_best(f: &Facts, limit: usize) -> Option<(String, Table)> {
    use crate::analyze::default_best as db;
    let mut pairs = db::pairs(f.rows());
    if pairs.is_empty() {
        return None;
    }
    let line = db::tally(&pairs).line();
    pairs.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    let multi_env = f.envs.len() > 1;
    let mut cols = vec![("case", false)];
    if multi_env {
        cols.push(("env", false));
    }
    cols.extend([
        ("default picks", false),
        ("default ms", true),
        ("best solution", false),
        ("best ms", true),
        ("default / best", true),
        ("beyond noise", false),
    ]);
    let mut t = Table::new(&cols).rest_in("results.csv");
    t.left_out = pairs.len().saturating_sub(limit);
    for p in pairs.iter().take(limit) {
        let d = p.default;
        let mut row = vec![Cell::Titled {
            text: f.case_label(d),
            title: format!("case {}", d.case_id),
        }];
        if multi_env {
            row.push(Cell::Text(f.env_label(&d.env).to_string()));
        }
        row.extend([
            Cell::or_dash(d.chosen.to_string()),
            Cell::Num(d.median_ms.map(facts::ms).unwrap_or_default()),
            Cell::Text(p.best.solver.to_string()),
            Cell::Num(p.best.median_ms.map(facts::ms).unwrap_or_default()),
            Cell::Num(format!("{:.3}", p.ratio)),
            Cell::Text(if p.beats_default() {
                "yes: the best is faster".into()
            } else {
                format!("no ({})", p.verdict.name())
            }),
        ]);
        t.push(row);
    }
    Some((line, t))
}

/// What the default-against-best section says under its heading.
pub const DEFAULT_BEST_NOTE: &str = "Each case that ran the library's own pick (`default`, what it picked in `default picks`) beside its named solutions (`solver = \"all\"`): the default's time against the fastest named solution's in the same env combination and tree. \"Beyond noise\" is the rule compare uses (trials needed); `rocsweep tune` writes the files that make a library take the best where it is.";

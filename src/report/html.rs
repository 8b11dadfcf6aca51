//! report.html: one self-contained page (plots embedded as PNG data URIs, no scripts, no
//! external files) that can be mailed or attached to a bug report as it is.

use super::facts::{self, Facts};
use super::heatmap::Heatmap;
use super::html_table::table;
use super::map;
use super::table::{self, Fastest};
use crate::error::CmdError;
use crate::results::rundata::Row;
use base64::Engine as _;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Tables stop here so a run with thousands of failures still opens in a browser; the CSV has
/// the rest.
const MAX_TABLE_ROWS: usize = 500;
/// Past this many cells the map is shown as the picture (the page would grow past a few MB).
const MAX_MAP_CELLS: usize = 40_000;

/// A plot already written next to the report, to embed.
pub struct Plot {
    pub heading: &'static str,
    /// Shown as an HTML map whose cells lead to their units (the heatmap) instead of the image.
    pub as_map: bool,
    pub png: PathBuf,
    pub svg: PathBuf,
    pub caption: String,
}

/// Text for HTML element content and attribute values (`markup::html::escape`).
pub use crate::markup::html::escape;

const STYLE: &str = r#"
body { font-family: "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px 32px; color: #212121; max-width: 1400px; }
h1 { font-size: 26px; margin: 0 0 4px 0; }
h2 { font-size: 20px; margin: 28px 0 10px 0; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
p.sub { color: #555; margin: 0 0 12px 0; font-size: 15px; }
table { border-collapse: collapse; font-size: 14px; margin: 6px 0; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f5f5f5; }
table.kv th { width: 170px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.zero td { color: #aaa; }
.sw { display: inline-block; width: 12px; height: 12px; border: 1px solid #777; margin-right: 6px; vertical-align: -1px; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 3px; font-weight: bold; font-size: 13px; }
.hatched { background-image: repeating-linear-gradient(-45deg, rgba(255,255,255,.5) 0 2px, transparent 2px 6px); }
.err { white-space: pre-wrap; word-break: break-word; font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; max-width: 620px; }
details pre { white-space: pre-wrap; word-break: break-word; font-size: 12px; background: #fafafa; border: 1px solid #eee; padding: 6px; margin: 4px 0 0 0; }
figure { margin: 8px 0 16px 0; }
figure img { max-width: 100%; border: 1px solid #e0e0e0; }
figcaption { color: #555; font-size: 13px; margin-top: 4px; }
code { font-size: 13px; word-break: break-all; }
code.copy { user-select: all; -webkit-user-select: all; white-space: nowrap; background: #f5f5f5; padding: 1px 4px; }
.note { color: #555; font-size: 14px; }
"#;

/// `map` is the safe-region map already built for heatmap.png, shown here as HTML tables.
pub fn write(
    f: &Facts,
    dir: &Path,
    plots: &[Plot],
    map: Option<&Heatmap>,
) -> Result<PathBuf, CmdError> {
    let page = render(f, plots, map)?;
    let path = dir.join("report.html");
    crate::results::atomic::write(&path, page)
        .map_err(|e| CmdError::Failure(format!("{}: {e}", path.display())))?;
    Ok(path)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn render(f: &Facts, plots: &[Plot], map: Option<&Heatmap>) -> Result<String, CmdError> {
    let m = &f.run.manifest;
    let mut h = String::new();
    let name = escape(&m.sweep.name);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>rocsweep report: {name}</title>\n<style>{STYLE}{}</style>\n</head>\n<body>\n",
        map::STYLE
    );
    let _ = write!(
        h,
        "<h1>rocsweep report: {name}</h1>\n<p class=\"sub\">{} on {} · {}</p>\n",
        escape(&m.sweep.op),
        escape(&f.device()),
        escape(&facts::counts_line(&f.counts(None)))
    );
    h.push_str("<h2>Run</h2>\n");
    table(&mut h, &table::run(f), MAX_TABLE_ROWS);
    h.push_str("<h2>Counts per status</h2>\n");
    table(&mut h, &table::counts(f), MAX_TABLE_ROWS);
    if let Some(lines) = f.model_lines() {
        h.push_str("<h2>The model's calls</h2>\n<p>Weighted by the calls (and traced time) the sweep's cases stand for; a case counts under the worst status of the solvers that ran it.</p>\n<ul>\n");
        for (env, line) in lines {
            let _ = writeln!(h, "<li><b>{}</b>: {}</li>", escape(env), escape(line));
        }
        h.push_str("</ul>\n");
    }
    which_layer(&mut h, f);
    let not_ok = f.not_ok();
    let (failures, not_run): (Vec<&Row>, Vec<&Row>) =
        not_ok.into_iter().partition(|r| r.status.is_failure());
    // The units that have a row in a table below, so a map cell can link to it.
    let listed: HashSet<&str> = failures
        .iter()
        .take(MAX_TABLE_ROWS)
        .chain(not_run.iter().take(MAX_TABLE_ROWS))
        .map(|r| r.unit_id.as_str())
        .collect();
    plot_sections(&mut h, f, plots, map, &listed)?;
    h.push_str("<h2>Failures</h2>\n");
    if failures.is_empty() {
        h.push_str("<p class=\"note\">No unit failed (no mismatch, zeros, nonfinite, hang, crash or error).</p>\n");
    } else {
        table(
            &mut h,
            &table::units(f, &failures, MAX_TABLE_ROWS),
            MAX_TABLE_ROWS,
        );
    }
    h.push_str("<h2>Not supported, skipped or interrupted</h2>\n");
    if not_run.is_empty() {
        h.push_str("<p class=\"note\">None.</p>\n");
    } else {
        table(
            &mut h,
            &table::units(f, &not_run, MAX_TABLE_ROWS),
            MAX_TABLE_ROWS,
        );
    }
    if let Some(t) = table::unstable(f, MAX_TABLE_ROWS) {
        let _ = writeln!(
            h,
            "<h2>Unstable between processes</h2>\n<p class=\"note\">{}</p>",
            escape(table::UNSTABLE_NOTE)
        );
        table(&mut h, &t, MAX_TABLE_ROWS);
    }
    if let Some(note) = f.inferred_note() {
        let _ = writeln!(
            h,
            "<h2>Inferred</h2>\n<p class=\"note\">{}</p>",
            escape(&note)
        );
    }
    fastest_table(&mut h, f);
    trees(&mut h, f);
    files_list(&mut h, f, plots);
    let _ = write!(
        h,
        "<p class=\"note\">Written by rocsweep {} from results.csv and manifest.json; nothing here touched a device.</p>\n</body>\n</html>\n",
        escape(crate::build_info::VERSION)
    );
    Ok(h)
}

/// Each plot with the section it leads: the safe-region map followed by the boundary table, the
/// default-against-best plot after its table.
fn plot_sections(
    h: &mut String,
    f: &Facts,
    plots: &[Plot],
    map: Option<&Heatmap>,
    listed: &HashSet<&str>,
) -> Result<(), CmdError> {
    for p in plots {
        if p.heading == super::default_best::HEADING {
            default_best(h, f);
        }
        plot(h, p, map, listed)?;
        if p.as_map
            && let Some((along, t)) = f.boundary_table()
        {
            let _ = writeln!(h, "<h2>Boundaries along {}</h2>", escape(&along));
            match t {
                Ok(t) => {
                    let _ = writeln!(
                        h,
                        "<p class=\"note\">{}</p>",
                        escape(&crate::analyze::boundary_render::explanation(&along))
                    );
                    table(h, &t, MAX_TABLE_ROWS);
                }
                Err(none) => {
                    let _ = writeln!(h, "<p>{}</p>", escape(&none));
                }
            }
        }
    }
    Ok(())
}

/// One plot: the heatmap as the HTML map when it is drawable and small enough (its failed cells
/// linking to the `listed` rows below), else the PNG embedded, with links to both pictures.
fn plot(
    h: &mut String,
    p: &Plot,
    map: Option<&Heatmap>,
    listed: &HashSet<&str>,
) -> Result<(), CmdError> {
    let _ = writeln!(h, "<h2>{}</h2>", escape(p.heading));
    let links = format!(
        "<a href=\"{0}\">{0}</a> · <a href=\"{1}\">{1}</a>",
        escape(&file_name(&p.png)),
        escape(&file_name(&p.svg))
    );
    let shown = map.filter(|m| p.as_map && m.drawable() && m.cells() <= MAX_MAP_CELLS);
    if let Some(m) = shown {
        map::write(h, m, listed);
        let _ = writeln!(
            h,
            "<p class=\"note\">{} Point at a cell for its unit; a cell that did not end ok leads to its row below, with the command that reproduces it. As pictures: {links}</p>",
            escape(&p.caption)
        );
        return Ok(());
    }
    let bytes = std::fs::read(&p.png)
        .map_err(|e| CmdError::Failure(format!("{}: {e}", p.png.display())))?;
    let _ = writeln!(
        h,
        "<figure><img src=\"data:image/png;base64,{}\" alt=\"{}\"><figcaption>{} {links}</figcaption></figure>",
        base64::engine::general_purpose::STANDARD.encode(&bytes),
        escape(p.heading),
        escape(&p.caption),
    );
    Ok(())
}

/// The which-layer table, in a run over the PyTorch layer and a direct library, with each
/// failing pair's Python script folded below it.
fn which_layer(h: &mut String, f: &Facts) {
    let Some((counts, t, scripts)) = table::layers(f) else {
        return;
    };
    let _ = writeln!(
        h,
        "<h2>Which layer fails</h2>\n<p><strong>{}</strong></p>\n<p class=\"note\">{}</p>",
        escape(&counts),
        escape(crate::analyze::layers::EXPLANATION)
    );
    table(h, &t, MAX_TABLE_ROWS);
    for (head, script) in scripts {
        let _ = writeln!(
            h,
            "<details><summary>Python: {}</summary><pre>{}</pre></details>",
            escape(&head),
            escape(&script)
        );
    }
}

/// The library's default against its best solution per shape: the sentence and the table, its
/// plot after them.
fn default_best(h: &mut String, f: &Facts) {
    let Some((line, t)) = table::default_best(f, MAX_TABLE_ROWS) else {
        return;
    };
    let _ = writeln!(
        h,
        "<h2>Default against best</h2>\n<p><strong>{}</strong>.</p>\n<p class=\"note\">{}</p>",
        escape(&line),
        escape(table::DEFAULT_BEST_NOTE)
    );
    table(h, &t, MAX_TABLE_ROWS);
}

fn fastest_table(h: &mut String, f: &Facts) {
    h.push_str("<h2>Fastest solver per case</h2>\n");
    match table::fastest(f, MAX_TABLE_ROWS) {
        Fastest::None => {
            h.push_str("<p class=\"note\">No timings: no unit ended ok with a median time.</p>\n")
        }
        Fastest::Same(line) => {
            let _ = writeln!(h, "<p>{}</p>", escape(&line));
        }
        Fastest::Table(t) => table(h, &t, MAX_TABLE_ROWS),
    }
}

fn files_list(h: &mut String, f: &Facts, plots: &[Plot]) {
    h.push_str("<h2>Files</h2>\n<ul>\n");
    let _ = writeln!(
        h,
        "<li>run directory: <code>{}</code></li>",
        escape(&f.dir_text())
    );
    let mut names: Vec<String> = vec![
        "results.csv".into(),
        "manifest.json".into(),
        "summary.md".into(),
    ];
    for p in plots {
        names.push(file_name(&p.png));
        names.push(file_name(&p.svg));
    }
    for n in names {
        let n = escape(&n);
        let _ = writeln!(h, "<li><a href=\"{n}\">{n}</a></li>");
    }
    h.push_str("</ul>\n");
}

/// Each ROCm tree of the run and the library files its workers mapped.
fn trees(h: &mut String, f: &Facts) {
    let groups = super::provenance::groups(&f.run.manifest);
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(
        h,
        "<h2>ROCm trees</h2>\n<p class=\"note\">{}</p>",
        escape(super::provenance::NOTE)
    );
    for g in groups {
        let _ = writeln!(h, "<p><b>{}</b></p>", escape(&g.heading()));
        if !g.note.is_empty() {
            let _ = writeln!(h, "<p class=\"note\">{}</p>", escape(&g.note));
        }
        table(h, &g.table(), MAX_TABLE_ROWS);
    }
}

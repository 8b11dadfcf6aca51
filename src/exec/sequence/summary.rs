//! What a sequence run says in words: the steps, what a failing step needs, what differed
//! between processes, as one model of sections rendered to summary.md and report.html.

use super::model::{ComboResult, Finding, what_it_does};
use crate::markup::html::escape;
use crate::markup::markdown as md;
use crate::markup::table::{Cell, Table};
use crate::op::canonical_text;
use crate::spec::sequence::{At, Sequence, Step};
use std::fmt::Write as _;

/// A step as a reader names it: `step 5, conv2d c_in=64;...` (with its iteration when the
/// sequence repeats).
pub fn name(at: &At, step: &Step, repeats: bool) -> String {
    let text = canonical_text(step.case.problem.kind(), &step.case.values);
    let (op, params) = text.split_once(';').unwrap_or((&text, ""));
    let iteration = if repeats {
        format!(" (iteration {})", at.iteration)
    } else {
        String::new()
    };
    format!(
        "step {}{iteration}, {op} {} solver={}",
        at.position,
        params.replace(';', " "),
        step.solver
    )
}

/// One sentence per env combination whose sequence failed: what fails, and what it needs.
pub fn finding_lines(results: &[ComboResult]) -> Vec<String> {
    results
        .iter()
        .filter_map(|c| {
            let f = c.finding.as_ref()?;
            let r = &c.steps[f.index];
            let does = what_it_does(r.outcome.status);
            let env = if c.env.is_empty() {
                String::new()
            } else {
                format!(" [{}]", c.env)
            };
            Some(match &f.needs {
                None => format!(
                    "step at run order {}{env} {does} alone in a fresh process too: an ordinary failure, not the sequence's",
                    f.index + 1
                ),
                Some(m) => {
                    let needed = if m.steps.is_empty() {
                        "nothing before it (it passed alone once and failed here: flaky?)".to_string()
                    } else {
                        format!(
                            "run order {}",
                            m.steps
                                .iter()
                                .map(|i| (i + 1).to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    };
                    let cut = if m.cut {
                        " (budget reached: a shorter prefix may exist)"
                    } else {
                        ""
                    };
                    let ended = match m.ended {
                        0 => String::new(),
                        n => format!(", {n} ended early by a hang or crash"),
                    };
                    format!(
                        "step at run order {}{env} {does} only after {needed} ran in the same process; it passes alone ({} fresh processes searched{ended}{cut}); minimal.toml reproduces it",
                        f.index + 1,
                        m.candidates
                    )
                }
            })
        })
        .collect()
}

/// One env combination's part of the summary: a heading, sentences, and its steps' table.
pub struct Section {
    pub heading: String,
    pub paragraphs: Vec<String>,
    pub list: Vec<String>,
    pub table: Table,
}

/// The summary's parts: its title, what a sequence run does, and a section per env combination.
pub fn sections(
    seq: &Sequence,
    order: &[(At, &Step)],
    results: &[ComboResult],
) -> (String, String, Vec<Section>) {
    let title = format!("Sequence {}", seq.sweep.name);
    let intro = format!(
        "{} steps x {} iteration(s), run in order in one worker process per env combination \
         ({} combination(s)). A failing step is run alone in a fresh process; if it passes \
         there, the steps before it are shrunk to those it needs (delta debugging, each \
         candidate in a fresh process).",
        seq.steps.len(),
        seq.repeat,
        results.len()
    );
    let sections = results.iter().map(|c| section(seq, order, c)).collect();
    (title, intro, sections)
}

fn section(seq: &Sequence, order: &[(At, &Step)], c: &ComboResult) -> Section {
    let repeats = seq.repeat > 1;
    let env = if c.env.is_empty() {
        "(no env variables)"
    } else {
        &c.env
    };
    let mut paragraphs = Vec::new();
    if let Some(k) = c.picked_up {
        paragraphs.push(format!(
            "Resumed: run order 1-{k} finished in an earlier worker process; the replay picked up at run order {} in a fresh one, so the steps from there on did not have the earlier ones in their process.",
            k + 1
        ));
    }
    if let Some(f) = &c.finding {
        paragraphs.push(finding_sentence(seq, order, c, f));
    }
    let list: Vec<String> = c
        .steps
        .iter()
        .filter(|r| r.outcome.stable == "no")
        .map(|r| {
            let (at, step) = order[r.at.index];
            format!("{}: {}", name(&at, step, repeats), r.outcome.unstable)
        })
        .collect();
    if !list.is_empty() {
        paragraphs.push(
            "Steps that differed between the fresh processes the sequence ran in (`--processes`):"
                .into(),
        );
    }
    Section {
        heading: format!("{} {env}", c.backend),
        paragraphs,
        list,
        table: steps_table(order, c, repeats),
    }
}

fn finding_sentence(seq: &Sequence, order: &[(At, &Step)], c: &ComboResult, f: &Finding) -> String {
    let repeats = seq.repeat > 1;
    let r = &c.steps[f.index];
    let (at, step) = order[f.index];
    let does = what_it_does(r.outcome.status);
    match &f.needs {
        None => format!(
            "{} {does}, alone in a fresh process too: an ordinary failure.",
            name(&at, step, repeats)
        ),
        Some(m) if m.steps.is_empty() => format!(
            "{} {does} in the sequence but passed alone and with every prefix tried ({} processes): not reproduced.",
            name(&at, step, repeats),
            m.candidates
        ),
        Some(m) => {
            let needed: Vec<String> = m
                .steps
                .iter()
                .map(|&i| name(&order[i].0, order[i].1, repeats))
                .collect();
            format!(
                "{} {does} only after {} ran in the same process; alone it passes. Found in {} fresh processes{}; `rocsweep run minimal.toml` reproduces it.",
                name(&at, step, repeats),
                needed.join(" and "),
                m.candidates,
                if m.cut {
                    " (the budget ran out: a shorter prefix may exist)"
                } else {
                    ""
                }
            )
        }
    }
}

fn steps_table(order: &[(At, &Step)], c: &ComboResult, repeats: bool) -> Table {
    let mut t = Table::new(&[
        ("order", true),
        ("step", false),
        ("status", false),
        ("phase", false),
        ("median ms", true),
        ("error", false),
    ]);
    for r in &c.steps {
        let (at, step) = order[r.at.index];
        let ms = r
            .outcome
            .stats
            .as_ref()
            .map(|st| format!("{:.4}", st.median * 1e3))
            .unwrap_or_default();
        t.push(vec![
            Cell::num(r.at.index + 1),
            Cell::text(name(&at, step, repeats)),
            Cell::Status(r.outcome.status),
            Cell::or_dash(r.outcome.phase.clone()),
            Cell::or_dash(ms),
            Cell::or_dash(r.outcome.error.lines().next().unwrap_or("")),
        ]);
    }
    t
}

/// summary.md: the sections as Markdown.
pub fn markdown(seq: &Sequence, order: &[(At, &Step)], results: &[ComboResult]) -> String {
    let (title, intro, sections) = sections(seq, order, results);
    let mut s = format!("# {title}\n\n{intro}\n\n");
    for sec in sections {
        let _ = writeln!(s, "## {}\n", sec.heading);
        for p in &sec.paragraphs {
            let _ = writeln!(s, "{}\n", md::escape(p));
        }
        for item in &sec.list {
            let _ = writeln!(s, "- {}", md::escape(item));
        }
        if !sec.list.is_empty() {
            s.push('\n');
        }
        s.push_str(&md::table(&sec.table, usize::MAX));
        s.push('\n');
    }
    s
}

/// The page's own style: the report's fonts and table lines, a status in its colour.
const STYLE: &str = "body { font-family: \"DejaVu Sans\", Helvetica, Arial, sans-serif; margin: 24px 32px; color: #212121; max-width: 1400px; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; }
table { border-collapse: collapse; font-size: 14px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f5f5f5; }
td.num { text-align: right; }
td.ok { color: #2e7d32; font-weight: bold; }
td.bad { color: #c62828; font-weight: bold; }
p.sub { color: #555; }";

/// report.html: the same sections as a page of its own (escaped text only: names, errors and
/// env values come from libraries and files).
pub fn html(seq: &Sequence, order: &[(At, &Step)], results: &[ComboResult]) -> String {
    let (title, intro, sections) = sections(seq, order, results);
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>rocsweep: {t}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{t}</h1>\n<p class=\"sub\">{i}</p>\n",
        t = escape(&title),
        i = escape(&intro),
    );
    for sec in sections {
        let _ = writeln!(h, "<h2>{}</h2>", escape(&sec.heading));
        for p in &sec.paragraphs {
            let _ = writeln!(h, "<p>{}</p>", escape(p));
        }
        if !sec.list.is_empty() {
            h.push_str("<ul>\n");
            for item in &sec.list {
                let _ = writeln!(h, "<li>{}</li>", escape(item));
            }
            h.push_str("</ul>\n");
        }
        html_table(&mut h, &sec.table);
    }
    h.push_str("</body>\n</html>\n");
    h
}

fn html_table(h: &mut String, t: &Table) {
    h.push_str("<table>\n<tr>");
    for c in &t.columns {
        let _ = write!(h, "<th>{}</th>", escape(&c.name));
    }
    h.push_str("</tr>\n");
    for row in &t.rows {
        h.push_str("<tr>");
        for c in &row.cells {
            let (class, text) = match c {
                Cell::Num(x) => ("num", x.clone()),
                Cell::Text(x) => ("", x.clone()),
                Cell::Status(st) if st.is_failure() => ("bad", st.name().to_string()),
                Cell::Status(st) => ("ok", st.name().to_string()),
                other => ("", md::cell(other)),
            };
            let _ = write!(h, "<td class=\"{class}\">{}</td>", escape(&text));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

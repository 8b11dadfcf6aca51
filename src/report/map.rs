//! The safe-region map as HTML tables in report.html: the same panels and cells as heatmap.png
//! (`heatmap::build`), but each cell names its unit when pointed at, and a cell whose unit did
//! not end ok links to that unit's row in the tables below, where its repro command is.

use super::draw;
use super::facts;
use super::heatmap::{Cell, Heatmap, Panel};
use super::html_table::anchor_id;
use crate::markup::html::escape;
use std::collections::HashSet;
use std::fmt::Write as _;

/// Per-solver panels past this many are folded away behind the overview.
const OPEN_PANELS: usize = 6;

pub const STYLE: &str = r#"
.maps { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; margin: 6px 0; }
table.map { border-collapse: separate; border-spacing: 2px; font-size: 12px; margin: 0; }
table.map caption { font-weight: bold; font-size: 14px; padding-bottom: 4px; }
table.map td { border: 0; min-width: 46px; height: 24px; padding: 0 3px; text-align: center; vertical-align: middle; white-space: nowrap; }
table.map td a { color: inherit; text-decoration: underline dotted; display: block; }
table.map th { background: none; border: 0; color: #555; font-weight: normal; padding: 0 6px; white-space: nowrap; text-align: center; }
table.map th.y { text-align: right; }
table.map th.axis { font-weight: bold; }
details.panels > summary { cursor: pointer; font-size: 15px; margin: 8px 0; }
ul.legend { list-style: none; padding: 0; margin: 8px 0; display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 13px; }
ul.legend li { white-space: nowrap; }
ul.legend .sw { text-align: center; font-size: 9px; line-height: 12px; }
"#;

/// Writes the map's panels: overviews first, the per-solver panels after (folded when many).
pub fn write(h: &mut String, m: &Heatmap, listed: &HashSet<&str>) {
    // The empty cell is explained under the legend.
    for line in m
        .subtitle
        .iter()
        .filter(|l| *l != super::heatmap::NO_UNIT_TEXT)
    {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", escape(line));
    }
    let (overview, solvers): (Vec<&Panel>, Vec<&Panel>) = m.panels.iter().partition(|p| p.overview);
    if !overview.is_empty() {
        panels(h, m, &overview, listed);
    }
    if solvers.len() > OPEN_PANELS {
        let _ = writeln!(
            h,
            "<details class=\"panels\"><summary>Each of the {} solvers</summary>",
            solvers.len()
        );
        panels(h, m, &solvers, listed);
        h.push_str("</details>\n");
    } else {
        panels(h, m, &solvers, listed);
    }
    legend(h, m);
}

/// The map's key, as heatmap.png's legend has it: each status's colour and letter (inferred
/// ones hatched), then the empty cell, explained when the map has one.
fn legend(h: &mut String, m: &Heatmap) {
    h.push_str("<ul class=\"legend\">\n");
    for s in crate::results::status::Status::ALL {
        let bg = facts::color(s);
        let code = facts::code(s);
        let class = if s.is_inferred() { "sw hatched" } else { "sw" };
        let text = if code.is_empty() {
            s.name().to_string()
        } else if facts::shows_phase(s) {
            format!("{code}:phase {s}")
        } else {
            format!("{code} {s}")
        };
        let note = match s {
            crate::results::status::Status::InferredOk => " (hatched: inferred, not run)",
            crate::results::status::Status::InferredFail => {
                " (hatched, in the colour of the failure it was inferred from)"
            }
            _ => "",
        };
        let _ = writeln!(
            h,
            "<li><span class=\"{class}\" style=\"background:{}\"></span>{}{note}</li>",
            facts::hex(bg),
            escape(&text)
        );
    }
    let _ = writeln!(
        h,
        "<li><span class=\"sw\" style=\"background:{}\"></span>no unit</li>\n</ul>",
        facts::hex(facts::NO_UNIT)
    );
    if m.has_empty_cells() {
        let _ = writeln!(
            h,
            "<p class=\"note\">A {}.</p>",
            escape(super::heatmap::NO_UNIT_TEXT)
        );
    }
}

fn panels(h: &mut String, m: &Heatmap, list: &[&Panel], listed: &HashSet<&str>) {
    h.push_str("<div class=\"maps\">\n");
    for p in list {
        panel(h, m, p, listed);
    }
    h.push_str("</div>\n");
}

fn panel(h: &mut String, m: &Heatmap, p: &Panel, listed: &HashSet<&str>) {
    let nx = m.x_labels.len();
    let _ = write!(
        h,
        "<table class=\"map\"><caption>{}</caption>\n<tr><th class=\"y axis\">{}</th><th colspan=\"{nx}\"></th></tr>\n",
        escape(&p.title),
        escape(&m.y_title)
    );
    // Smallest configuration at the bottom, as on a plot's y axis (and in heatmap.png).
    for yi in (0..m.y_labels.len()).rev() {
        let _ = write!(h, "<tr><th class=\"y\">{}</th>", escape(&m.y_labels[yi]));
        for xi in 0..nx {
            match p.cells.get(yi * nx + xi).and_then(Option::as_ref) {
                Some(c) => cell(h, c, &m.x_labels[xi], listed),
                None => {
                    let _ = write!(
                        h,
                        "<td style=\"background:{}\" title=\"no unit\"></td>",
                        facts::hex(facts::NO_UNIT)
                    );
                }
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("<tr><th></th>");
    for x in &m.x_labels {
        let _ = write!(h, "<th>{}</th>", escape(x));
    }
    let _ = writeln!(
        h,
        "</tr>\n<tr><th></th><th class=\"axis\" colspan=\"{nx}\">{}</th></tr>\n</table>",
        escape(&m.x_title)
    );
}

fn cell(h: &mut String, c: &Cell, x: &str, listed: &HashSet<&str>) {
    let bg = facts::color(c.shade);
    let fg = draw::contrast(bg);
    let text = c.text();
    let mut title = format!("{}", c.status);
    if !c.phase.is_empty() {
        let _ = write!(title, " in {}", c.phase);
    }
    let _ = write!(
        title,
        " · solver {} · {} (x {x}) · unit {}",
        c.solver, c.case, c.unit_id
    );
    if c.units > 1 {
        let _ = write!(title, " · shown for {} units", c.units);
    }
    let class = if c.status.is_inferred() {
        " class=\"hatched\""
    } else {
        ""
    };
    let body = if listed.contains(c.unit_id.as_str()) {
        format!(
            "<a href=\"#{}\">{}</a>",
            anchor_id(&c.unit_id),
            if text.is_empty() {
                "&nbsp;".to_string()
            } else {
                escape(&text)
            }
        )
    } else {
        escape(&text)
    };
    let _ = write!(
        h,
        "<td{class} style=\"background:{};color:{}\" title=\"{}\">{body}</td>",
        facts::hex(bg),
        facts::hex(fg),
        escape(&title)
    );
}

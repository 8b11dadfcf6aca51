//! The table model (`markup::table`) in HTML, for report.html: statuses as badges in the
//! plots' colours, errors with the worker's log folded away, commands selectable at a click.

use super::facts;
use crate::markup::html::escape;
use crate::markup::table::{Cell, Layout, RowKind, Span, Table};
use crate::results::status::Status;
use std::fmt::Write as _;

/// A table, its first `limit` rows; the rest are counted in a note naming the file that has them.
pub fn table(h: &mut String, t: &Table, limit: usize) {
    let facts = t.layout == Layout::Facts;
    h.push_str(if facts {
        "<table class=\"kv\">\n"
    } else {
        "<table>\n"
    });
    if t.columns.iter().any(|c| !c.name.is_empty()) {
        h.push_str("<tr>");
        for c in &t.columns {
            let class = if c.numeric { " class=\"num\"" } else { "" };
            let _ = write!(h, "<th{class}>{}</th>", escape(&c.name));
        }
        h.push_str("</tr>\n");
    }
    for row in t.rows.iter().take(limit) {
        let _ = write!(
            h,
            "<tr{}{}>",
            anchor_attr(&row.anchor),
            kind_class(row.kind)
        );
        for (i, c) in row.cells.iter().enumerate() {
            let head = row.kind == RowKind::Total || (facts && i == 0);
            h.push_str(&cell(c, head));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    let more = t.rows.len().saturating_sub(limit) + t.left_out;
    if more > 0 {
        let _ = writeln!(h, "<p class=\"note\">{more} more in {}.</p>", t.rest_in);
    }
}

fn anchor_attr(anchor: &Option<String>) -> String {
    anchor
        .as_deref()
        .map(|id| format!(" id=\"{}\"", anchor_id(id)))
        .unwrap_or_default()
}

fn kind_class(kind: RowKind) -> &'static str {
    match kind {
        RowKind::Faint => " class=\"zero\"",
        RowKind::Plain | RowKind::Total => "",
    }
}

/// The link target of a unit's row: ids are hex, but they come from a file.
pub fn anchor_id(unit_id: &str) -> String {
    format!("u-{}", escape(unit_id))
}

/// One cell, as `th` in a total row or a fact's name.
fn cell(c: &Cell, head: bool) -> String {
    let tag = if head { "th" } else { "td" };
    let (class, inner) = match c {
        Cell::Text(t) => ("", escape(t)),
        Cell::Num(t) => (" class=\"num\"", escape(t)),
        Cell::Status(s) => ("", badge(*s)),
        Cell::Legend(s) => ("", legend(*s)),
        Cell::Code(t) => ("", format!("<code class=\"copy\">{}</code>", escape(t))),
        Cell::Error(e) => ("", error_cell(e)),
        Cell::Strong(t) => ("", format!("<b>{}</b>", escape(t))),
        Cell::Spans(spans) => ("", spans_html(spans)),
        Cell::Titled { text, title } => {
            return format!(
                "<{tag} title=\"{}\">{}</{tag}>",
                escape(title),
                escape(text)
            );
        }
    };
    format!("<{tag}{class}>{inner}</{tag}>")
}

fn spans_html(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|p| match p {
            Span::Text(t) => escape(t),
            Span::Code(t) => format!("<code>{}</code>", escape(t)),
            Span::Break => "<br>".to_string(),
        })
        .collect()
}

fn badge(s: Status) -> String {
    let bg = facts::color(s);
    let fg = super::draw::contrast(bg);
    format!(
        r#"<span class="badge{}" style="background:{};color:{}">{}</span>"#,
        hatched_class(s),
        facts::hex(bg),
        facts::hex(fg),
        s.name()
    )
}

/// A swatch of the status's plot colour, then its name.
fn legend(s: Status) -> String {
    format!(
        "<span class=\"sw{}\" style=\"background:{}\"></span>{}",
        hatched_class(s),
        facts::hex(facts::color(s)),
        s.name()
    )
}

/// Inferred statuses are drawn hatched, as in the plots.
fn hatched_class(s: Status) -> &'static str {
    if s.is_inferred() { " hatched" } else { "" }
}

/// The error's first line in the table; the worker's log tail (joined with ` | ` in the CSV)
/// folded away below it, one line per line again.
fn error_cell(error: &str) -> String {
    let mut parts = error.split(" | ");
    let first = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    let mut out = format!("<div class=\"err\">{}</div>", escape(first));
    if !rest.is_empty() {
        let _ = write!(
            out,
            "<details><summary>{} more line{}</summary><pre>{}</pre></details>",
            rest.len(),
            if rest.len() == 1 { "" } else { "s" },
            escape(&rest.join("\n"))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_cell_folds_the_log_tail() {
        let c = error_cell("killed by SIGSEGV | --- worker log tail --- | a<b");
        assert!(c.contains("killed by SIGSEGV</div>"));
        assert!(c.contains("2 more lines"));
        assert!(c.contains("--- worker log tail ---\na&lt;b"));
    }

    #[test]
    fn facts_name_their_rows_and_totals_are_headers() {
        let mut t = Table::facts(&["", ""]);
        t.fact("command", vec![Cell::Code("a <b>".into())]);
        let mut h = String::new();
        table(&mut h, &t, 10);
        assert_eq!(
            h,
            "<table class=\"kv\">\n<tr><th>command</th><td><code class=\"copy\">a &lt;b&gt;</code></td></tr>\n</table>\n"
        );
        let mut g = Table::new(&[("status", false), ("all", true)]);
        g.push_as(
            vec![Cell::Legend(Status::Hang), Cell::num(0)],
            RowKind::Faint,
            Some("1f".into()),
        );
        g.push_as(
            vec![Cell::text("total"), Cell::num(3)],
            RowKind::Total,
            None,
        );
        let mut h = String::new();
        table(&mut h, &g, 10);
        assert!(
            h.contains("<tr id=\"u-1f\" class=\"zero\"><td><span class=\"sw\""),
            "{h}"
        );
        assert!(
            h.contains("<tr><th>total</th><th class=\"num\">3</th></tr>"),
            "{h}"
        );
    }
}

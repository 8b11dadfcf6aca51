//! Markdown (GitHub-flavoured): the one escaper for text, code spans, and the table model's
//! renderer, for summary.md, compare.md, recommend.md, repro pages and an import's summary.

use super::table::{Cell, RowKind, Span, Table};
use std::fmt::Write as _;

/// An error cell shows its first line, cut here: issue trackers cut long comments, and the
/// run's results.csv keeps the whole text.
const MAX_ERROR_CHARS: usize = 200;

/// Plain text in Markdown (a table cell or a line): `|` would end a cell, backticks and
/// backslashes would start markup, and angle brackets or ampersands would be taken as HTML by
/// renderers that allow some; a line break would end the table row.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\\' => out.push_str("\\\\"),
            '`' => out.push_str("\\`"),
            '*' => out.push_str("\\*"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// A Markdown code span, safe inside a table cell: copied as it is, except that `|` stays
/// escaped (GFM ends the cell at a bare one even inside backticks) and a backtick in the text
/// needs a longer fence.
pub fn code(s: &str) -> String {
    let text = s.replace(['\n', '\r'], " ").replace('|', "\\|");
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

/// A table, its first `limit` rows; the rest are counted in a note naming the file that has
/// them. Rows that say nothing (`RowKind::Faint`) are left out: Markdown cannot grey them.
pub fn table(t: &Table, limit: usize) -> String {
    let mut s = String::from("|");
    for c in &t.columns {
        if c.name.is_empty() {
            s.push_str(" |");
        } else {
            let _ = write!(s, " {} |", escape(&c.name));
        }
    }
    s.push_str("\n|");
    for c in &t.columns {
        s.push_str(if c.numeric { "---:|" } else { "---|" });
    }
    s.push('\n');
    let shown: Vec<_> = t.rows.iter().filter(|r| r.kind != RowKind::Faint).collect();
    for row in shown.iter().take(limit) {
        s.push('|');
        for c in &row.cells {
            let _ = write!(s, " {} |", cell(c));
        }
        s.push('\n');
    }
    let more = shown.len().saturating_sub(limit) + t.left_out;
    if more > 0 {
        let _ = writeln!(s, "\n{more} more in {}.", t.rest_in);
    }
    s
}

/// One cell's Markdown.
pub fn cell(c: &Cell) -> String {
    match c {
        Cell::Text(t) | Cell::Num(t) => escape(t),
        Cell::Titled { text, .. } => escape(text),
        Cell::Status(st) | Cell::Legend(st) => st.name().to_string(),
        Cell::Code(t) => code(t),
        Cell::Error(e) => escape(&first_line(e)),
        Cell::Strong(t) => format!("**{}**", escape(t)),
        Cell::Spans(spans) => spans
            .iter()
            .map(|p| match p {
                Span::Text(t) => escape(t),
                Span::Code(t) => code(t),
                Span::Break => "; ".to_string(),
            })
            .collect(),
    }
}

/// An error's first line (the CSV joins a worker's log tail on with ` | `), cut to
/// `MAX_ERROR_CHARS`.
fn first_line(e: &str) -> String {
    let first = e.split(" | ").next().unwrap_or("");
    if first.chars().count() > MAX_ERROR_CHARS {
        first.chars().take(MAX_ERROR_CHARS).collect::<String>() + "…"
    } else {
        first.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markup::table::Table;
    use crate::results::status::Status;

    #[test]
    fn escape_cannot_break_a_table_or_inject_html() {
        assert_eq!(escape("a|b <s> & c"), "a\\|b &lt;s&gt; &amp; c");
        assert_eq!(escape("**x** `y`"), "\\*\\*x\\*\\* \\`y\\`");
        assert_eq!(escape("two\nlines"), "two lines");
    }

    #[test]
    fn code_keeps_the_text_and_the_table() {
        assert_eq!(
            code("rocsweep repro 'a|b' 1f"),
            "`rocsweep repro 'a\\|b' 1f`"
        );
        assert_eq!(code("x`y"), "`` x`y ``");
    }

    #[test]
    fn a_table_escapes_every_cell_and_counts_what_it_leaves_out() {
        let mut t = Table::new(&[("unit", false), ("ms", true), ("error", false)]).rest_in("x.csv");
        for i in 0..3 {
            t.push(vec![
                Cell::Spans(vec![Span::Code(format!("u{i}")), Span::Text(" a|b".into())]),
                Cell::num(i),
                Cell::Error("bad <thing> | --- worker log tail --- | more".into()),
            ]);
        }
        t.push_as(vec![Cell::Status(Status::Hang)], RowKind::Faint, None);
        let md = table(&t, 2);
        assert_eq!(
            md,
            "| unit | ms | error |\n|---|---:|---|\n\
             | `u0` a\\|b | 0 | bad &lt;thing&gt; |\n\
             | `u1` a\\|b | 1 | bad &lt;thing&gt; |\n\
             \n1 more in x.csv.\n"
        );
    }

    #[test]
    fn facts_have_an_empty_header_and_errors_are_cut() {
        let mut t = Table::facts(&["", ""]);
        t.fact("status", vec![Cell::Strong("hang".into())]);
        t.fact("error", vec![Cell::Error("x".repeat(300))]);
        let md = table(&t, 10);
        assert!(
            md.starts_with("| | |\n|---|---|\n| status | **hang** |\n"),
            "{md}"
        );
        assert!(
            md.contains(&format!("| error | {}… |", "x".repeat(200))),
            "{md}"
        );
    }
}

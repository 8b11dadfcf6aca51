//! Escaping for the formats reports are written in, one function per format, used by every
//! writer (report, compare, recommend, repro): text from libraries, worker logs and run
//! directories may contain anything.

pub mod shell;

/// Text for HTML element content and attribute values.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Plain text in Markdown (a table cell or a line): `|` would end a cell, backticks and
/// backslashes would start markup, and angle brackets or ampersands would be taken as HTML by
/// renderers that allow some; a line break would end the table row.
pub fn md(s: &str) -> String {
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
pub fn md_code(s: &str) -> String {
    let text = s.replace(['\n', '\r'], " ").replace('|', "\\|");
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_neutralises_markup() {
        assert_eq!(
            html("<script>\"a\" & 'b'</script>"),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
    }

    #[test]
    fn md_cannot_break_a_table_or_inject_html() {
        assert_eq!(md("a|b <s> & c"), "a\\|b &lt;s&gt; &amp; c");
        assert_eq!(md("**x** `y`"), "\\*\\*x\\*\\* \\`y\\`");
        assert_eq!(md("two\nlines"), "two lines");
    }

    #[test]
    fn md_code_keeps_the_text_and_the_table() {
        assert_eq!(
            md_code("rocsweep repro 'a|b' 1f"),
            "`rocsweep repro 'a\\|b' 1f`"
        );
        assert_eq!(md_code("x`y"), "`` x`y ``");
    }
}

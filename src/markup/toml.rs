//! TOML as rocsweep writes it for files a user runs (repro's sweep, a sequence's
//! `minimal.toml`, a step on its own): strings escaped, keys quoted where TOML needs it,
//! parameters as the op expects them, a run's policies as tables. Values come from run
//! directories and libraries: nothing in them can end a string or start a table.

use crate::op::ParamKind;
use std::fmt::Write as _;

/// A TOML basic string.
pub fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML key: bare where TOML allows it, else quoted (a planted newline stays inside it).
pub fn toml_key(k: &str) -> String {
    let bare = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    if !k.is_empty() && k.bytes().all(bare) {
        k.to_string()
    } else {
        toml_string(k)
    }
}

/// A parameter's CSV text as a TOML value of the kind the op expects (words quoted).
pub fn toml_value(kind: ParamKind, text: &str) -> String {
    let literal = match kind {
        ParamKind::Int { .. } => text.parse::<i64>().is_ok(),
        ParamKind::Float { .. } => text.parse::<f64>().is_ok(),
        ParamKind::Bool => text == "true" || text == "false",
        ParamKind::Choice(_) | ParamKind::DType(_) => false,
    };
    if literal {
        text.to_string()
    } else {
        toml_string(text)
    }
}

/// A run's `[limits]`, `[timing]` and `[verify]` tables as a sweep file writes them.
pub fn policies_toml(policies: &impl serde::Serialize) -> String {
    let mut s = String::new();
    if let Ok(serde_json::Value::Object(sections)) = serde_json::to_value(policies) {
        for (section, body) in sections {
            let serde_json::Value::Object(keys) = body else {
                continue;
            };
            let _ = writeln!(s, "\n[{section}]");
            for (k, v) in keys {
                let text = match v {
                    serde_json::Value::String(t) => toml_string(&t),
                    other => other.to_string(),
                };
                let _ = writeln!(s, "{k} = {text}");
            }
        }
    }
    s
}

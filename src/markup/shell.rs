//! Quoting for text meant to be pasted into a shell or sourced from /etc/profile.d: values come
//! from run directories, so nothing in them may be expanded or split by the shell.

/// One shell word, on one line: bare when every character is inert in POSIX sh, otherwise
/// single-quoted (inside single quotes nothing is special except the quote itself, written
/// `'\''`). A word with a control character (a newline in a directory's name) is written
/// `$'...'` with escapes (bash, zsh, ksh, busybox and POSIX 2024 sh): a command shown on one
/// line, in a table cell or a code span, must name the same path when pasted.
pub fn quote(s: &str) -> String {
    let inert = |b: u8| b.is_ascii_alphanumeric() || b"_-./:,+=@%".contains(&b);
    if !s.is_empty() && s.bytes().all(inert) {
        s.to_string()
    } else if s.chars().any(char::is_control) {
        ansi_c(s)
    } else {
        single(s)
    }
}

/// POSIX single quotes, newlines kept as they are (valid for `sh`, which a profile is sourced
/// by and which may not know `$'...'`).
fn single(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `$'...'`: backslash, quote and every control character escaped, nothing else.
fn ansi_c(s: &str) -> String {
    let mut out = String::from("$'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() && (c as u32) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Whether `export NAME=...` accepts the name.
pub fn is_var_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `export NAME=value`, or a comment saying why the variable cannot be exported.
pub fn export_line(name: &str, value: &str) -> String {
    if is_var_name(name) {
        let inert = !value.is_empty()
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-./:,+=@%".contains(&b));
        let value = if inert {
            value.to_string()
        } else {
            single(value)
        };
        format!("export {name}={value}")
    } else {
        format!(
            "# not exported: {} is not a shell variable name",
            quote(name)
        )
    }
}

/// Text for a `#` comment: a newline in a value (a hostname, an env value) would otherwise end
/// the comment and turn the rest into a command of a file that root shells source.
pub fn comment(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(quote("10.3.0"), "10.3.0");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$(rm -rf /)"), "'$(rm -rf /)'");
        assert!(is_var_name("MIOPEN_DEBUG_CONV_GEMM"));
        assert!(!is_var_name("1X"));
        assert!(!is_var_name("A-B"));
        assert!(export_line("A;B", "1").starts_with('#'));
        assert_eq!(comment("a\nrm -rf /"), "a rm -rf /");
        assert_eq!(export_line("A", "x\ny"), "export A='x\ny'");
    }

    #[test]
    fn a_word_with_a_newline_stays_on_one_line_and_means_the_same_to_bash() {
        for word in ["runs/a\nb", "it's\t\\x", "\u{1b}[31m"] {
            let q = quote(word);
            assert!(!q.contains('\n') && !q.contains('\t'), "{q}");
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(format!("printf %s {q}"))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), word, "{q}");
        }
    }
}

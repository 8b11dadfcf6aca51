//! Quoting for text meant to be pasted into a shell or sourced from /etc/profile.d: values come
//! from run directories, so nothing in them may be expanded or split by the shell.

/// One shell word: bare when every character is inert in POSIX sh, otherwise single-quoted
/// (inside single quotes nothing is special except the quote itself, written `'\''`).
pub fn quote(s: &str) -> String {
    let inert = |b: u8| b.is_ascii_alphanumeric() || b"_-./:,+=@%".contains(&b);
    if !s.is_empty() && s.bytes().all(inert) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
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
        format!("export {name}={}", quote(value))
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
    }
}

//! Which environment variables hold credentials, and what a run directory shows of their values:
//! a credential's value is never written anywhere (`<masked>`, or a label that tells a sweep's
//! values apart without giving them away).

/// Parts of a name that mark a credential: its value is never written anywhere.
const SECRET_PARTS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "KEY",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "PRIVATE",
    "COOKIE",
    "SESSION",
    "SIGNATURE",
];
/// Words of a name (between `_` and other separators) that mark a credential, as whole words
/// only: `GITHUB_PAT`, `DB_PASS`, but not `PATH` or `BYPASS`.
const SECRET_WORDS: &[&str] = &["PAT", "PASS", "PASSPHRASE"];
/// What a credential's value is replaced with.
pub const MASKED: &str = "<masked>";

/// Whether a variable's name looks like a credential's (case-insensitive).
pub fn is_secret(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    SECRET_PARTS.iter().any(|p| up.contains(p))
        || up
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| SECRET_WORDS.contains(&w))
}

/// What a value the sweep itself sets under a credential's name is written as, wherever it is
/// written (the `env` column, unit ids, the manifest's combinations and sweep text, reports):
/// `<masked:` and the first 8 hex digits of its SHA-256 `>`, so that two values stay two
/// combinations and the same value reads the same in two runs, and the value is not written.
pub fn sweep_secret_label(value: &str) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(value.as_bytes());
    let hex: String = d.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("<masked:{hex}>")
}

/// A value the sweep sets, as a run directory may hold it (see [`sweep_secret_label`]).
pub fn sweep_value_shown<'a>(name: &str, value: &'a str) -> std::borrow::Cow<'a, str> {
    if is_secret(name) {
        std::borrow::Cow::Owned(sweep_secret_label(value))
    } else {
        std::borrow::Cow::Borrowed(value)
    }
}

/// Whether a value read back from a run directory is a masked one.
pub fn is_masked(value: &str) -> bool {
    value == MASKED || (value.starts_with("<masked:") && value.ends_with('>'))
}

/// The value as it may be written into a run directory: masked when the name looks like a
/// credential's.
pub fn shown<'a>(name: &str, value: &'a str) -> &'a str {
    if is_secret(name) { MASKED } else { value }
}

#[cfg(test)]
mod secret_tests {
    use super::*;

    #[test]
    fn credential_names_are_told_from_paths_and_labels_keep_values_apart() {
        for name in [
            "GITHUB_PAT",
            "DB_PASS",
            "MY_PASSWD",
            "AWS_CREDENTIALS",
            "HF_TOKEN",
        ] {
            assert!(is_secret(name), "{name}");
        }
        for name in [
            "PATH",
            "PYTHONPATH",
            "LD_LIBRARY_PATH",
            "BYPASS_CACHE",
            "HSA_XNACK",
        ] {
            assert!(!is_secret(name), "{name}");
        }
        let (a, b) = (sweep_secret_label("one"), sweep_secret_label("two"));
        assert_ne!(a, b);
        assert!(
            a.starts_with("<masked:") && a.len() == "<masked:>".len() + 8,
            "{a}"
        );
        assert!(is_masked(&a) && is_masked(MASKED) && !is_masked("one"));
        assert_eq!(sweep_value_shown("MY_FLAG", "1"), "1");
    }
}

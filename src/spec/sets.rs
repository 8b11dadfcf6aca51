//! `--set SECTION.KEY=VALUE`: one setting of `[limits]`, `[timing]` or `[verify]` from the
//! command line (`--set limits.run=5`, `--set timing.trials=1`). The argument is read as the
//! TOML it already is (a dotted key), through the same readers as the sweep file's sections, so
//! every check and message is the file's; errors point into the argument.
//!
//! Sets travel with the `--axis` overrides (the manifest's `sweep.overrides`, which a resume,
//! a merge and `repro` reload) written `--set SECTION.KEY=VALUE`; an `--axis` override never
//! starts with `--`.

use super::error::SpecError;
use super::policy::{Limits, TimingPolicy, VerifyPolicy};
use super::reader::Cx;
use std::sync::Arc;
use toml::de::DeTable;

const PREFIX: &str = "--set ";
const SECTIONS: [&str; 3] = ["limits", "timing", "verify"];

/// The override that records a `--set` argument.
pub fn override_of(arg: &str) -> String {
    format!("{PREFIX}{arg}")
}

/// The `--set` argument an override records, if it is one.
pub fn as_set(o: &str) -> Option<&str> {
    o.strip_prefix(PREFIX)
}

/// An override as command-line words: `--set limits.run=5` or `--axis c_in=16`.
pub fn flag_and_value(o: &str) -> (&'static str, &str) {
    match as_set(o) {
        Some(s) => ("--set", s),
        None => ("--axis", o),
    }
}

/// Applies one `--set` argument.
pub(super) fn apply(
    arg: &str,
    limits: &mut Limits,
    timing: &mut TimingPolicy,
    verify: &mut VerifyPolicy,
) -> Result<(), SpecError> {
    let text = Arc::new(arg.to_string());
    let cx = Cx {
        file: "--set",
        text: &text,
    };
    let shape =
        "expected SECTION.KEY=VALUE with SECTION one of limits, timing, verify (e.g. limits.run=5)";
    let root = DeTable::parse(arg).map_err(|e| {
        cx.err(
            e.span().unwrap_or(0..arg.len()),
            format!("{shape}: {}", e.message().trim()),
        )
    })?;
    let root = root.into_inner();
    if root.is_empty() {
        return Err(cx.err(0..arg.len(), shape));
    }
    cx.deny_unknown(&root, &SECTIONS, "--set")?;
    for (section, value) in root.iter() {
        match section.get_ref().as_ref() {
            "limits" => cx.limits_into(limits, value)?,
            "timing" => cx.timing_into(timing, value)?,
            _ => cx.verify_into(verify, value)?,
        }
    }
    Ok(())
}

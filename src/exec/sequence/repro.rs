//! `rocsweep repro SEQ_RUN UNIT` of a sequence run: what the step did, and how to make it happen
//! again: `minimal.toml` when its failure needs earlier steps, else a sequence file of the step
//! alone (its parameters, backend and env combination), printed to paste into a file.

use crate::error::CmdError;
use crate::markup::shell;
use crate::markup::toml::{toml_key, toml_string, toml_value};
use crate::op::OpKind;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

pub fn command(dir: &Path, unit: &str) -> Result<String, CmdError> {
    let csv = dir.join("results.csv");
    let (header, rows) = crate::results::csv::read(&csv)
        .map_err(|e| CmdError::BadInput(format!("{}: {e}", csv.display())))?;
    let rows: Vec<HashMap<&str, &str>> = rows
        .iter()
        .map(|r| {
            header
                .iter()
                .map(String::as_str)
                .zip(r.iter().map(String::as_str))
                .collect()
        })
        .collect();
    let get = field;
    let Some(row) = rows.iter().find(|r| get(r, "unit_id") == unit) else {
        let ids: Vec<&str> = rows.iter().take(5).map(|r| get(r, "unit_id")).collect();
        return Err(CmdError::BadInput(format!(
            "{}: no step with unit id `{}` (its steps' ids begin {})",
            csv.display(),
            unit.escape_debug(),
            ids.join(", ")
        )));
    };
    let mut s = format!(
        "Step {} of sequence run {} (run order {}, iteration {}): {} {} on {}, {}{}\n",
        get(row, "position"),
        dir.display(),
        get(row, "order"),
        get(row, "iteration"),
        get(row, "op"),
        get(row, "params")
            .split_once(';')
            .map_or("", |(_, p)| p)
            .replace(';', " "),
        get(row, "backend"),
        get(row, "status"),
        match get(row, "error") {
            "" => String::new(),
            e => format!(": {e}"),
        }
    );
    let needs = get(row, "needs");
    if !needs.is_empty() && dir.join("minimal.toml").is_file() {
        let _ = write!(
            s,
            "\nIt fails only after steps {} (run order) ran in the same process; alone it passes. \
             The smallest sequence found that reproduces it:\n\n  rocsweep run {}\n",
            needs.replace(';', ", "),
            shell::quote(&dir.join("minimal.toml").display().to_string())
        );
        return Ok(s);
    }
    let _ = write!(
        s,
        "\nThe step alone, as a sequence file of its own (save it and `rocsweep run` it):\n\n{}",
        alone(row).ok_or_else(|| {
            CmdError::BadInput(format!(
                "{}: the step's op or parameters cannot be read back",
                csv.display()
            ))
        })?
    );
    Ok(s)
}

/// A one-step sequence file of a row: its op and parameters, backend and env variables.
fn alone(row: &HashMap<&str, &str>) -> Option<String> {
    let get = |r: &HashMap<&str, &str>, k: &str| -> String {
        r.get(k).copied().unwrap_or("").to_string()
    };
    let op = OpKind::parse(&get(row, "op"))?;
    let mut s = format!(
        "name = \"repro-{}\"\nbackend = {}\n",
        get(row, "unit_id")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>(),
        toml_string(&get(row, "backend"))
    );
    let env = get(row, "env");
    let env = env.as_str();
    if !env.is_empty() {
        s.push_str("\n[env]\n");
        for kv in env.split(';').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let _ = writeln!(s, "{} = {}", toml_key(k), toml_string(v));
        }
    }
    let _ = write!(s, "\n[[step]]\nop = {}\n", toml_string(op.name()));
    let params = get(row, "params");
    let params = params.as_str();
    for pair in params.split(';').skip(1) {
        let (k, v) = pair.split_once('=')?;
        let def = op.params().iter().find(|d| d.name == k)?;
        let _ = writeln!(s, "{k} = {}", toml_value(def.kind, v));
    }
    let _ = writeln!(s, "solver = {}", toml_string(&get(row, "solver")));
    crate::spec::sequence::load_str("repro.toml", &s, &[]).ok()?;
    Some(s)
}

/// A row's value in column `k` (empty when the column is missing).
fn field<'a>(r: &HashMap<&'a str, &'a str>, k: &str) -> &'a str {
    r.get(k).copied().unwrap_or("")
}

//! MIOpen's user find-db, as far as rocsweep relies on it: Find writes what it found for a
//! problem into `$MIOPEN_USER_DB_PATH/<arch>_<CUs>.ufdb.txt`, one line per problem
//! (`<problem key>=<algorithm>:<solver>,<ms>,<workspace>,<algorithm>;...`), a later Find of the
//! same problem replacing its line. rocsweep never reads or writes these lines: `tune` hands the
//! files MIOpen wrote to the user as they are, so the fake's only duty is to write some where
//! the real library writes them.

use crate::model::Model;
use std::path::PathBuf;

pub const VAR: &str = "MIOPEN_USER_DB_PATH";

/// Records one Find: `key` names the problem, `found` its (algorithm, solver id, ms, workspace)
/// fastest first. Without the variable, or where the file cannot be written, nothing (MIOpen
/// warns and goes on).
pub(crate) fn record(m: &Model, key: &str, found: &[(String, u64, f32, u64)]) {
    let Some(dir) = std::env::var_os(VAR).filter(|d| !d.is_empty()) else {
        return;
    };
    let path = PathBuf::from(dir).join(format!("{}_{}.ufdb.txt", m.device.arch, m.device.cus));
    let value: Vec<String> = found
        .iter()
        .map(|(algo, id, ms, ws)| format!("{algo}:Solver{id},{ms:.5},{ws},{algo}"))
        .collect();
    let line = format!("{key}={}", value.join(";"));
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let mut lines: Vec<&str> = old
        .lines()
        .filter(|l| l.split_once('=').map(|(k, _)| k) != Some(key))
        .collect();
    lines.push(&line);
    let _ = std::fs::create_dir_all(path.parent().unwrap_or(&path))
        .and_then(|_| std::fs::write(&path, lines.join("\n") + "\n"));
}

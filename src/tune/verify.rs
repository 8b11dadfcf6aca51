//! `tune --verify`: the tuned shapes run again, each in fresh worker processes under the
//! watchdog (an ordinary `rocsweep run` of a sweep of just those cases, `solver = "default"`,
//! the run's env combination, tree and policies) with the library's file applied through its
//! variable. A shape is verified when the library ran the solution its row names (the `chosen`
//! column) and its time moved from the run's default beyond noise (the rule `compare` uses);
//! otherwise it is dropped from the file, with why.

use crate::analyze::noise::{self, Timing, Verdict};
use crate::error::CmdError;
use crate::markup::toml::{policies_toml, toml_key, toml_string, toml_value};
use crate::op::OpKind;
use crate::results::rundata::{Row, RunData};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the verification found for one shape.
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// The named solution ran; the default's time before and with the file.
    Verified {
        before_ms: f64,
        after_ms: f64,
    },
    Dropped(String),
}

/// A shape to verify: its row in the run and the `chosen` text the library gives when it runs
/// the row's solution (None where the library does not say which it ran: rocBLAS's own pick;
/// then its log line proves it, [`Proof::Log`]).
pub struct Want<'a> {
    pub default: &'a Row,
    pub chosen: Option<String>,
}

/// How a verification run proves the library took the file's row.
#[derive(Clone, Copy, Debug)]
pub enum Proof {
    /// The `chosen` column names the solution.
    Chosen,
    /// The library logs this line (its log switched on by `var` = `value`) in the run's worker
    /// logs: a run of one shape, so the line is that shape's.
    Log {
        var: &'static str,
        value: &'static str,
        line: &'static str,
    },
}

/// The sweep that runs `wants` (one env combination's) again with `var` = `file`.
fn sweep(run: &RunData, wants: &[Want], var: &str, file: &Path, lib: &str, proof: Proof) -> String {
    let m = &run.manifest;
    let mut s = format!(
        "# rocsweep tune --verify: the tuned shapes of {} with {var} set.\nname = {}\nop = \"gemm\"\n",
        crate::markup::shell::comment(&run.dir.display().to_string()),
        toml_string(&format!("tune-verify-{lib}"))
    );
    if let Some(w) = wants.first() {
        let _ = writeln!(s, "backend = {}", toml_string(&w.default.backend));
    }
    s.push_str("\n[axes]\nsolver = \"default\"\n");
    for w in wants {
        s.push_str("\n[[cases]]\n");
        for def in OpKind::Gemm.params() {
            if let Some(v) = w.default.param(def.name) {
                let _ = writeln!(s, "{} = {}", def.name, toml_value(def.kind, v));
            }
        }
    }
    s.push_str("\n[env]\n");
    if let Some(w) = wants.first() {
        for (k, v) in crate::analyze::repro::env_vars(run, w.default) {
            if k != var {
                let _ = writeln!(s, "{} = {}", toml_key(&k), toml_string(&v));
            }
        }
    }
    let _ = writeln!(
        s,
        "{} = {}",
        toml_key(var),
        toml_string(&file.display().to_string())
    );
    if let Proof::Log { var, value, .. } = proof {
        let _ = writeln!(s, "{} = {}", toml_key(var), toml_string(value));
    }
    s.push_str(&policies_toml(&m.policies));
    s
}

/// The tree the run's rows of `rocm` label used, for the verification's `--rocm`.
fn tree_of(run: &RunData, rocm: &str) -> Option<String> {
    run.manifest
        .rocm_trees
        .iter()
        .find(|t| t.rocm == rocm)
        .map(|t| t.path.clone())
        .filter(|p| !p.is_empty())
}

/// Runs the verification of `wants` (all of one env combination) into `dir` and judges each.
pub fn run(
    run: &RunData,
    wants: &[Want],
    (var, file): (&str, &Path),
    (lib, proof): (&str, Proof),
    dir: &Path,
) -> Result<HashMap<String, Check>, CmdError> {
    let Some(first) = wants.first() else {
        return Ok(HashMap::new());
    };
    let fail = |what: &Path, e: &dyn std::fmt::Display| {
        CmdError::Failure(format!("{}: {e}", what.display()))
    };
    let sweep_path = dir.with_extension("toml");
    crate::results::atomic::write(&sweep_path, sweep(run, wants, var, file, lib, proof))
        .map_err(|e| fail(&sweep_path, &e))?;
    let exe = std::env::current_exe().map_err(|e| fail(Path::new("rocsweep"), &e))?;
    let mut c = Command::new(exe);
    c.arg("run")
        .arg(&sweep_path)
        .arg("--out")
        .arg(dir)
        .args(["--quiet", "--no-report"]);
    let tree_given = std::env::var_os(crate::rocm_tree::discover::ROCM_ENV).is_some();
    if !tree_given && let Some(tree) = tree_of(run, &first.default.rocm) {
        if !Path::new(&tree).exists() {
            let why = format!(
                "the run's ROCm tree {tree} is not on this machine (name the tree to verify with: --rocm PATH)"
            );
            return Ok(wants
                .iter()
                .map(|w| (w.default.case_id.to_string(), Check::Dropped(why.clone())))
                .collect());
        }
        c.arg("--rocm").arg(tree);
    }
    crate::sayln!(
        "verify: {} shape(s) with {var} in fresh processes -> {}",
        wants.len(),
        dir.display()
    );
    let status = c
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(|e| fail(&sweep_path, &e))?;
    let after = match RunData::load(dir) {
        Ok(r) => r,
        Err(e) => {
            let code = status
                .code()
                .map_or_else(|| "by a signal".to_string(), |c| format!("with exit {c}"));
            let why = format!(
                "the verification run ended {code} before it wrote its results (its message is above): {e}"
            );
            return Ok(wants
                .iter()
                .map(|w| (w.default.case_id.to_string(), Check::Dropped(why.clone())))
                .collect());
        }
    };
    let floor = noise::floor(&run.rows)
        .unwrap_or(0.0)
        .max(noise::floor(&after.rows).unwrap_or(0.0));
    let logged = match proof {
        Proof::Log { var, value, line } if !logs_say(dir, line) => Some(format!(
            "the library never logged `{line}` ({var}={value}) in the verification's worker logs: it did not take the file's row"
        )),
        _ => None,
    };
    Ok(wants
        .iter()
        .map(|w| {
            let check = match &logged {
                Some(why) => Check::Dropped(why.clone()),
                None => judge(w, &after.rows, floor),
            };
            (w.default.case_id.to_string(), check)
        })
        .collect())
}

/// Whether a worker log of the run in `dir` holds `line`.
fn logs_say(dir: &Path, line: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir.join("workers")) else {
        return false;
    };
    entries.flatten().any(|e| {
        std::fs::read(e.path())
            .map(|b| String::from_utf8_lossy(&b).contains(line))
            .unwrap_or(false)
    })
}

/// One shape: the library must have run the named solution, and the time moved beyond noise.
fn judge(w: &Want, after: &[Row], floor: f64) -> Check {
    let Some(row) = after
        .iter()
        .find(|r| r.case_id == w.default.case_id && r.solver.as_str() == "default")
    else {
        return Check::Dropped("the verification run has no row for it".into());
    };
    if let Some(want) = &w.chosen
        && row.chosen.as_str() != want
    {
        return Check::Dropped(format!(
            "the library ran `{}`, not `{want}`: it did not take the file's row",
            if row.chosen.is_empty() {
                "(nothing said)"
            } else {
                row.chosen.as_str()
            },
        ));
    }
    let (Some(before), Some(now)) = (Timing::of(w.default), Timing::of(row)) else {
        return Check::Dropped(format!("status {} with the file", row.status));
    };
    match noise::verdict(before, now, floor) {
        (_, Verdict::Faster) => Check::Verified {
            before_ms: before.median_ms,
            after_ms: now.median_ms,
        },
        (r, v) => Check::Dropped(format!(
            "its time did not move beyond noise: {:.4} ms before, {:.4} ms with it ({:.2}x, {})",
            before.median_ms,
            now.median_ms,
            r,
            v.name()
        )),
    }
}

/// Where a library's verification run goes: `<out>/verify-<lib>/`, a previous one replaced (it
/// is ours: a run directory), anything else refused.
pub fn dir(out: &Path, lib: &str) -> Result<PathBuf, CmdError> {
    let d = out.join(format!("verify-{lib}"));
    let meta = std::fs::symlink_metadata(&d);
    if let Ok(m) = meta {
        let ours = m.is_dir() && d.join("manifest.json").is_file();
        if !ours {
            return Err(CmdError::BadInput(format!(
                "{}: exists and is not an earlier verification run; remove it or choose another --out",
                d.display()
            )));
        }
        std::fs::remove_dir_all(&d)
            .map_err(|e| CmdError::Failure(format!("{}: {e}", d.display())))?;
    }
    Ok(d)
}

//! MIOpen, for a convolution run: no db line written by rocsweep (their format and file names
//! are bound to MIOpen's version), but the user find-db MIOpen itself wrote during the run.
//! Each env combination ran in a sandbox of its own (`caches/<context>/miopen-user-db`, its
//! `context.json` naming the combination), so the combination `recommend` ranks first, with
//! whatever solvers its variables disable, left a find-db of its own: its files are copied as
//! they are into `OUT/miopen-user-db/`, and `OUT/miopen-env.sh` points MIOpen at them beside the
//! combination's variables.

use crate::analyze::recommend::build::recommend;
use crate::exec::supervise::handle::CONTEXT_FILE;
use crate::markup::markdown::{code, escape as esc};
use crate::markup::shell::quote;
use crate::results::atomic;
use crate::results::rundata::RunData;
use std::path::{Path, PathBuf};

pub const DIR: &str = "miopen-user-db";
pub const PROFILE: &str = "miopen-env.sh";

/// The find-db handed over: where it came from and what it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct FindDb {
    /// The combination's `env` text (`A=1;B=2`, empty for none).
    pub combo: String,
    pub vars: Vec<(String, String)>,
    /// `recommend`'s account of the combination (`0 failures`, `2 hangs ...`).
    pub failures: String,
    /// The files copied, by name, with their sizes.
    pub files: Vec<(String, u64)>,
    pub miopen: String,
    pub device: String,
}

/// Copies the find-db of the combination `recommend` ranks first into `out`, with its profile.
/// Err: why there is none to hand over.
pub fn write(run: &RunData, out: &Path) -> Result<FindDb, String> {
    let backend = &run.manifest.backend.backend;
    if backend != "rocm" {
        return Err(format!(
            "a {backend} run: only MIOpen (the rocm backend) keeps a find-db; cuDNN reads none and the CPU has none"
        ));
    }
    let rec = recommend(run);
    let best = rec
        .combos
        .first()
        .ok_or("the run has no units, so no combination to take a find-db from")?;
    if let Some((k, _)) = best.vars.iter().find(|(k, _)| !is_var_name(k)) {
        return Err(format!(
            "the run names an environment variable {k:?}, which no shell can export"
        ));
    }
    let source = context_dir(&run.dir, &best.key, &best.vars)?.join(DIR);
    let files = db_files(&source)?;
    if files.is_empty() {
        return Err(format!(
            "combination {} left no find-db in {} (MIOpen writes one when its Find runs: solver `find` or `default`)",
            label(&best.key),
            source.display()
        ));
    }
    let dest = out.join(DIR);
    atomic::refuse_links(out, &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    std::fs::create_dir_all(&dest).map_err(|e| format!("cannot create {}: {e}", dest.display()))?;
    let mut copied = Vec::new();
    for (name, path) in &files {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        atomic::write(&dest.join(name), &bytes)
            .map_err(|e| format!("{}: {e}", dest.join(name).display()))?;
        copied.push((name.clone(), bytes.len() as u64));
    }
    let db = FindDb {
        combo: best.key.clone(),
        vars: best.vars.clone(),
        failures: best.failure_summary(),
        files: copied,
        miopen: run
            .manifest
            .backend
            .versions
            .get("MIOpen")
            // `3.2.0 (/opt/rocm/lib/libMIOpen.so.1)`: the version, not where it was.
            .map(|v| v.split(" (").next().unwrap_or(v).to_string())
            .unwrap_or_else(|| "(version not recorded)".into()),
        device: best.device.clone(),
    };
    let profile = out.join(PROFILE);
    atomic::write(&profile, profile_text(&db, &dest))
        .map_err(|e| format!("{}: {e}", profile.display()))?;
    Ok(db)
}

/// The `caches/<context>` directory whose `context.json` names exactly `vars` (the combination
/// `key`).
fn context_dir(run_dir: &Path, key: &str, vars: &[(String, String)]) -> Result<PathBuf, String> {
    let caches = run_dir.join("caches");
    let entries = std::fs::read_dir(&caches).map_err(|e| {
        format!(
            "{}: {e} (a run with --shared-caches keeps no find-db of its own)",
            caches.display()
        )
    })?;
    let want = sorted(vars);
    let mut found = Vec::new();
    for e in entries.flatten() {
        let dir = e.path();
        let Ok(text) = std::fs::read_to_string(dir.join(CONTEXT_FILE)) else {
            continue;
        };
        let Ok(ctx) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let got: Vec<(String, String)> =
            serde_json::from_value(ctx["vars"].clone()).unwrap_or_default();
        if sorted(&got) == want {
            found.push(dir);
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(format!(
            "no sandbox of combination {} in {} (a run made before rocsweep named each sandbox's combination in {CONTEXT_FILE})",
            label(key),
            caches.display()
        )),
        n => Err(format!(
            "{n} sandboxes of combination {} in {} (one per ROCm tree or backend): tune a run of one tree",
            label(key),
            caches.display()
        )),
    }
}

/// The plain, non-empty files of a find-db directory, by name (a link is never followed).
fn db_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    let mut files: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| {
            e.path()
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_file() && m.len() > 0)
        })
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .collect();
    files.sort();
    Ok(files)
}

/// `s` on one comment line: no control character (a newline would end the comment and start a
/// command).
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn profile_text(db: &FindDb, dest: &Path) -> String {
    let abs = std::path::absolute(dest).unwrap_or_else(|_| dest.to_path_buf());
    let mut s = format!(
        "# {PROFILE}: MIOpen's own user find-db (written by MIOpen {}, on {}, during the run), from the\n\
         # sandbox of combination {} ({}), the one `rocsweep recommend` ranks first. Source it before\n\
         # starting the program; MIOpen then reads its earlier Find results instead of searching again.\n",
        one_line(&db.miopen),
        one_line(&db.device),
        one_line(&label(&db.combo)),
        one_line(&db.failures)
    );
    s.push_str(&format!(
        "export MIOPEN_USER_DB_PATH={}\n",
        quote(&abs.to_string_lossy())
    ));
    for (k, v) in &db.vars {
        if crate::spec::secret::is_masked(v) {
            s.push_str(&format!(
                "# {k} was set by the sweep; its value (a credential's) is not recorded\n"
            ));
        } else {
            s.push_str(&format!("export {k}={}\n", quote(v)));
        }
    }
    s
}

/// A name a shell's `export` takes: a letter or `_`, then letters, digits and `_`.
fn is_var_name(k: &str) -> bool {
    let mut c = k.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// The variables of the combination that switch solvers off (`MIOPEN_DEBUG_CONV_WINOGRAD=0`).
fn disabled(db: &FindDb) -> Vec<String> {
    db.vars
        .iter()
        .filter(|(k, v)| {
            k.starts_with("MIOPEN_DEBUG_")
                && matches!(
                    v.to_ascii_lowercase().as_str(),
                    "0" | "off" | "no" | "false" | "disable" | "disabled"
                )
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
}

/// The line tune prints.
pub fn headline(db: &FindDb) -> String {
    format!(
        "MIOpen's own find-db of combination {} ({}): {} file{} copied to {DIR}/; source {PROFILE} to use it",
        label(&db.combo),
        db.failures,
        db.files.len(),
        if db.files.len() == 1 { "" } else { "s" }
    )
}

/// tune.md of a convolution run.
pub fn markdown(run: &RunData, db: &FindDb) -> String {
    let off = disabled(db);
    let mut s = format!(
        "# MIOpen's own find-db (`rocsweep tune`)\n\n\
         Run {} (sweep {}), MIOpen {}, on {}.\n\n\
         rocsweep writes no MIOpen db line: their format and file names are bound to MIOpen's version. \
         During the run each env combination's workers had a user find-db of their own \
         (`MIOPEN_USER_DB_PATH` in the run's `caches/`), which MIOpen filled itself whenever its Find ran. \
         This is the one of combination {}, which `rocsweep recommend` ranks first ({}).\n\n",
        esc(&crate::results::rundir::dir_label(&run.dir)),
        esc(&run.manifest.sweep.name),
        esc(&db.miopen),
        esc(&db.device),
        label(&db.combo),
        esc(&db.failures)
    );
    if off.is_empty() {
        s.push_str("The combination switches no solver off: the find-db holds whatever MIOpen's Find chose.\n\n");
    } else {
        s.push_str(&format!(
            "Solvers switched off while MIOpen searched (so none of them is in the find-db): {}.\n\n",
            esc(&off.join(", "))
        ));
    }
    s.push_str(&format!(
        "To use it: `source {PROFILE}` (it sets `MIOPEN_USER_DB_PATH` to `{DIR}/` and the combination's variables). \
         MIOpen finds its find-db files by the device named in their file names (recent releases name their own version there too); on another device it searches again.\n\n\
         | file | bytes |\n|---|---|\n"
    ));
    for (name, bytes) in &db.files {
        s.push_str(&format!("| {} | {bytes} |\n", code(name)));
    }
    s.push_str(&picks(run, db));
    s
}

/// The evidence: what MIOpen's Find picked for each problem of the combination during the run
/// (the `find` and `default` units, their `chosen` column and time), which the find-db holds.
fn picks(run: &RunData, db: &FindDb) -> String {
    let rows: Vec<_> = run
        .rows
        .iter()
        .filter(|r| &*r.env == db.combo.as_str() && matches!(&*r.solver, "find" | "default"))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n## What MIOpen's Find picked in this combination\n\n\
         | problem | solver | status | MIOpen's pick | median ms |\n|---|---|---|---|---|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            esc(&r.params_text()),
            esc(&r.solver),
            r.status.name(),
            esc(&r.chosen),
            r.median_ms.map_or(String::new(), |m| format!("{m:.4}"))
        ));
    }
    s
}

fn sorted(vars: &[(String, String)]) -> Vec<(String, String)> {
    let mut v = vars.to_vec();
    v.sort();
    v
}

/// A combination's name in a sentence or a Markdown line: its variables as code, or
/// `(no variables)`.
pub fn label(key: &str) -> String {
    if key.is_empty() {
        "(no variables)".into()
    } else {
        code(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(device: &str, vars: &[(&str, &str)]) -> FindDb {
        FindDb {
            combo: String::new(),
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            failures: "0 failures".into(),
            files: vec![("gfx1100_96.ufdb.txt".into(), 10)],
            miopen: "3.2.0".into(),
            device: device.into(),
        }
    }

    #[test]
    fn the_profile_quotes_values_and_keeps_run_data_inside_its_comments() {
        let d = db(
            "gfx1100\nrm -rf ~",
            &[
                ("MIOPEN_DEBUG_CONV_WINOGRAD", "0"),
                ("MIOPEN_FIND_MODE", "a b;c"),
            ],
        );
        let text = profile_text(&d, Path::new("/x y/miopen-user-db"));
        for line in text.lines() {
            assert!(
                line.starts_with('#') || line.starts_with("export "),
                "{line:?} in\n{text}"
            );
        }
        assert!(
            text.contains("export MIOPEN_USER_DB_PATH='/x y/miopen-user-db'\n"),
            "{text}"
        );
        assert!(text.contains("export MIOPEN_FIND_MODE='a b;c'\n"), "{text}");
        assert!(
            text.contains("export MIOPEN_DEBUG_CONV_WINOGRAD=0\n"),
            "{text}"
        );
    }

    #[test]
    fn only_names_a_shell_exports_are_names_and_off_values_name_disabled_solvers() {
        assert!(is_var_name("MIOPEN_FIND_MODE") && is_var_name("_a1"));
        assert!(
            !is_var_name("1A") && !is_var_name("A;B") && !is_var_name("") && !is_var_name("A B")
        );
        let d = db(
            "",
            &[
                ("MIOPEN_DEBUG_CONV_GEMM", "1"),
                ("MIOPEN_DEBUG_CONV_WINOGRAD", "Off"),
                ("MIOPEN_FIND_MODE", "0"),
            ],
        );
        assert_eq!(disabled(&d), ["MIOPEN_DEBUG_CONV_WINOGRAD=Off"]);
    }
}

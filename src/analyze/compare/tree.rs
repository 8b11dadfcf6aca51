//! One ROCm tree of a run as a side of `compare`: `rocsweep compare RUN@/opt/rocm-5.7
//! RUN@~/venvs/gfx1010` sets one tree of a run over several (`rocm = [..]`, `--rocm A --rocm
//! B`) against another, of the same run or of another one, with the same noise-aware verdicts
//! and status transitions as two runs. A side's units are renamed to the ids they would have
//! without the tree, so the same case, solver and env combination meet across the two sides.

use crate::error::CmdError;
use crate::results::rundata::{Row, RunData};
use std::path::{Path, PathBuf};

/// A side of `compare` as the command line gives it: a run directory, or a run directory and
/// the label of one of its ROCm trees.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    pub dir: PathBuf,
    pub tree: Option<String>,
}

impl Side {
    /// `RUN_DIR` (an existing directory, whatever it is called) or `RUN_DIR@LABEL`, split at the
    /// first `@` whose left part is a directory (labels are paths and may hold `@` too).
    pub fn parse(arg: &Path) -> Side {
        let whole = Side {
            dir: arg.to_path_buf(),
            tree: None,
        };
        if arg.is_dir() {
            return whole;
        }
        let text = arg.to_string_lossy();
        text.match_indices('@')
            .map(|(i, _)| (&text[..i], &text[i + 1..]))
            .find(|(dir, label)| !label.is_empty() && Path::new(dir).is_dir())
            .map_or(whole.clone(), |(dir, label)| Side {
                dir: PathBuf::from(dir),
                tree: Some(label.to_string()),
            })
    }

    /// The run, or the units of its tree renamed as described above.
    pub fn load(&self) -> Result<RunData, CmdError> {
        let (mut run, rows) = self.open()?;
        for row in rows {
            run.rows.push(row?);
        }
        Ok(run)
    }

    /// The run's manifest (of its tree alone) and its rows one at a time, those of other trees
    /// left out and the tree's renamed as described above.
    pub fn open(
        &self,
    ) -> Result<(RunData, impl Iterator<Item = Result<Row, CmdError>> + use<>), CmdError> {
        let (mut run, rows) = RunData::open(&self.dir)?;
        if let Some(label) = &self.tree {
            select(&mut run, label)?;
        }
        let tree = self.tree.clone();
        let rows = rows.filter_map(move |row| match (row, &tree) {
            (Ok(r), Some(label)) => select_row(r, label).map(Ok),
            (row, _) => Some(row),
        });
        Ok((run, rows))
    }

    /// What names this side in compare's header: the run directory's name, with `@LABEL`.
    pub fn label(&self) -> String {
        let dir = crate::results::rundir::dir_label(&self.dir);
        match &self.tree {
            None => dir,
            Some(t) => format!("{dir}@{t}"),
        }
    }

    /// What names this side in file names: the run directory's name, and the tree's label with
    /// anything but `[A-Za-z0-9._-]` as `_`.
    pub fn file_label(&self) -> String {
        let dir = crate::results::rundir::dir_label(&self.dir);
        match &self.tree {
            None => dir,
            Some(t) => {
                let t: String = t
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || "._-".contains(c) {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
                format!("{dir}@{}", t.trim_matches('_'))
            }
        }
    }
}

/// The manifest of tree `label` of a run over several trees (its rows go through
/// [`select_row`]).
fn select(run: &mut RunData, label: &str) -> Result<(), CmdError> {
    let dir = run.dir.display().to_string();
    if !crate::spec::expand::several_trees(&run.manifest.env_combos) {
        return Err(CmdError::BadInput(format!(
            "{dir}@{label}: {dir} ran one ROCm tree; `@LABEL` picks one tree of a run over several (rocm = [..] in the sweep, or --rocm A --rocm B)"
        )));
    }
    let mut labels: Vec<&str> = Vec::new();
    for t in run
        .manifest
        .env_combos
        .iter()
        .filter_map(|c| c.rocm.as_ref())
    {
        if !labels.contains(&t.label.as_str()) {
            labels.push(&t.label);
        }
    }
    if !labels.contains(&label) {
        return Err(CmdError::BadInput(format!(
            "{dir}@{label}: the run has no ROCm tree `{label}`; its trees are: {}",
            labels.join(", ")
        )));
    }
    run.manifest
        .env_combos
        .retain(|c| c.rocm.as_ref().is_some_and(|t| t.label == label));
    for c in &mut run.manifest.env_combos {
        c.rocm = None;
    }
    // The tree's own library files (compare_libs), not the other trees'.
    run.manifest.rocm_trees.retain(|t| t.rocm == label);
    Ok(())
}

/// A row of tree `label` under the id and env it would have without the tree; None for another
/// tree's row.
fn select_row(mut r: Row, label: &str) -> Option<Row> {
    if r.rocm != label {
        return None;
    }
    r.env = without_tree(&r.env, label).into();
    r.unit_id = crate::op::unit_id(&r.case_id, &r.solver, &r.env).into();
    Some(r)
}

/// A context key (`backend=..;rocm=LABEL;ENV`) without its `rocm=LABEL` part.
fn without_tree(key: &str, label: &str) -> String {
    let part = format!("rocm={label}");
    if key == part {
        return String::new();
    }
    if let Some(rest) = key.strip_prefix(&format!("{part};")) {
        return rest.to_string();
    }
    key.replacen(&format!(";{part}"), "", 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_splits_at_the_first_at_sign_after_a_directory() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let run = tmp.path().join("run");
        std::fs::create_dir_all(&run).unwrap_or_else(|e| panic!("{e}"));
        let d = run.display().to_string();
        assert_eq!(Side::parse(&run).tree, None);
        let s = Side::parse(Path::new(&format!("{d}@/opt/rocm@5.7")));
        assert_eq!(
            (s.dir, s.tree.as_deref()),
            (run.clone(), Some("/opt/rocm@5.7"))
        );
        // Not a directory on the left: the whole text is the run directory (load says it is
        // missing).
        let s = Side::parse(Path::new("/no/such/run@x"));
        assert_eq!(s.tree, None);
        let s = Side::parse(Path::new(&format!("{d}@~/venvs/gfx1010")));
        assert_eq!(s.file_label(), "run@venvs_gfx1010");
    }

    #[test]
    fn the_tree_leaves_the_context_key_whole_or_in_part() {
        assert_eq!(without_tree("rocm=/a", "/a"), "");
        assert_eq!(without_tree("rocm=/a;X=1", "/a"), "X=1");
        assert_eq!(
            without_tree("backend=rocm;rocm=/a;X=1", "/a"),
            "backend=rocm;X=1"
        );
        assert_eq!(without_tree("backend=rocm;rocm=/a", "/a"), "backend=rocm");
    }
}

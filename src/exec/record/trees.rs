//! The ROCm tree of each env combination, as the supervisor sees it: recorded per combination
//! whose worker started (the manifest's `rocm_trees`: the tree, and every library file its
//! worker mapped with soname, version and SHA-256), and checked again before a resume, so that
//! a run directory never mixes rows of two trees under one label.
//!
//! The supervisor never loads a library: it names a combination's tree with the same pure
//! discovery its workers run (`rocm_tree::discover`, in the environment the worker gets), and
//! takes the mapped files from the worker's handshake.

use crate::backend::rocm::provenance::TREE_KEY;
use crate::backend::{BackendInfo, LibraryFile};
use crate::error::CmdError;
use crate::results::manifest::{Manifest, TreeRecord};
use crate::rocm_tree::discover::{self, Choice, Places, ROCM_ENV};
use crate::spec::expand::EnvCombo;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The variables discovery reads (`Places::from_lookup`); the others cannot change a tree.
const DISCOVERY_VARS: &[&str] = &[
    ROCM_ENV,
    discover::LIB_DIR_ENV,
    discover::OPT_ENV,
    "ROCM_PATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PATH",
    "PYENV_VERSION",
    "HOME",
    "LD_LIBRARY_PATH",
];

fn overrides(extra: &[(String, String)], combo: &EnvCombo) -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> = extra.to_vec();
    if let Some(t) = &combo.rocm {
        vars.push((ROCM_ENV.to_string(), t.path.clone()));
    }
    vars.extend(combo.vars.iter().cloned());
    vars.retain(|(k, _)| DISCOVERY_VARS.contains(&k.as_str()));
    vars
}

/// The tree a worker of each combination would choose: the supervisor's environment with the
/// worker's own variables (`extra`: what every worker gets, then the combination's tree and
/// variables), found once per distinct set of the variables discovery reads (a sweep of many
/// combinations over a few trees looks each tree up once).
struct Finder<'a> {
    extra: &'a [(String, String)],
    found: HashMap<Vec<(String, String)>, Result<Choice, String>>,
}

impl<'a> Finder<'a> {
    fn new(extra: &'a [(String, String)]) -> Finder<'a> {
        Finder {
            extra,
            found: HashMap::new(),
        }
    }

    fn tree(&mut self, combo: &EnvCombo) -> Result<Choice, String> {
        let key = overrides(self.extra, combo);
        self.found
            .entry(key)
            .or_insert_with_key(|k| discover::choose(&Places::with_overrides(k)))
            .clone()
    }
}

/// The trees recorded so far in a run: one per env combination whose worker started.
#[derive(Default)]
pub struct TreeBook {
    records: Vec<TreeRecord>,
    /// Files already hashed this run (by path), so each is read once per run.
    hashed: HashMap<String, LibraryFile>,
    /// Each combination's tree path by context key, from the supervisor's discovery.
    paths: HashMap<String, String>,
    /// The published run's directory and manifest: each new record is written into it at
    /// once, so that a run killed mid-way (SIGKILL, a lost node) still names the tree of every
    /// combination that has rows, and its resume is checked against them.
    persist: Option<(PathBuf, Manifest)>,
}

impl TreeBook {
    /// A book holding `old` (a resumed run's records) and the files of `seen` (the handshakes
    /// the run started with, already hashed). Only a ROCm run has trees to name.
    pub fn new(
        old: &[TreeRecord],
        seen: &[&BackendInfo],
        combos: &[EnvCombo],
        extra: &[(String, String)],
    ) -> TreeBook {
        let rocm = seen.iter().any(|i| i.backend == "rocm");
        let mut book = TreeBook {
            records: old.to_vec(),
            ..TreeBook::default()
        };
        for f in seen
            .iter()
            .flat_map(|i| &i.libraries)
            .chain(old.iter().flat_map(|r| &r.libraries))
            .filter(|f| is_digest(&f.sha256))
        {
            book.hashed
                .entry(f.path.clone())
                .or_insert_with(|| f.clone());
        }
        if rocm {
            let mut finder = Finder::new(extra);
            for c in combos {
                if let Ok(choice) = finder.tree(c) {
                    let path = choice.found.tree.path.display().to_string();
                    book.paths.insert(c.context_key(), path);
                }
            }
        }
        book
    }

    /// Keeps the records in `dir`'s manifest (`man`, as published) as they are added.
    pub fn persist_to(&mut self, dir: &Path, man: &Manifest) {
        self.persist = Some((dir.to_path_buf(), man.clone()));
    }

    /// Records the tree of the env combination `env` (a context key; `rocm`: its tree's label
    /// in a run over several) from its worker's handshake, once. A backend that names no ROCm
    /// tree has nothing to record.
    pub fn note(&mut self, env: &str, rocm: &str, info: &BackendInfo) {
        if self.records.iter().any(|r| r.env == env) {
            return;
        }
        let Some(tree) = info.versions.get(TREE_KEY) else {
            return;
        };
        let mut libraries = info.libraries.clone();
        let mut fresh: Vec<LibraryFile> = Vec::new();
        for lib in &mut libraries {
            match self.hashed.get(&lib.path) {
                Some(known) => *lib = known.clone(),
                None => fresh.push(lib.clone()),
            }
        }
        if !fresh.is_empty() {
            crate::exec::record::libhash::complete(&mut fresh);
            for f in fresh {
                if let Some(lib) = libraries.iter_mut().find(|l| l.path == f.path) {
                    *lib = f.clone();
                }
                if is_digest(&f.sha256) {
                    self.hashed.insert(f.path.clone(), f);
                }
            }
        }
        self.records.push(TreeRecord {
            env: env.to_string(),
            rocm: rocm.to_string(),
            tree: tree.clone(),
            path: self.paths.get(env).cloned().unwrap_or_default(),
            libraries,
            note: info
                .versions
                .get(crate::backend::rocm::provenance::MIOPEN_KEY)
                .cloned()
                .unwrap_or_default(),
        });
        if let Some((dir, man)) = &mut self.persist {
            man.rocm_trees = self.records.clone();
            if let Err(e) = crate::results::manifest::write(dir, man) {
                crate::noteln!(
                    "note: {}: the ROCm tree of {env} is not in manifest.json yet ({e}); it is \
                     written when the run ends",
                    dir.display()
                );
            }
        }
    }

    /// The records, in the order the combinations' workers started.
    pub fn records(&self) -> Vec<TreeRecord> {
        self.records.clone()
    }
}

/// Whether `s` is a SHA-256 in hex (not "unreadable: ..." or empty).
pub fn is_digest(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Before a resume changes anything: the trees its workers would use now must be the ones the
/// run recorded (the same path, and library files with the recorded SHA-256), else its rows
/// would mix two trees under one label. Bad input naming both trees and how to go on.
pub fn check_resume(
    dir: &Path,
    old: &Manifest,
    combos: &[EnvCombo],
    extra: &[(String, String)],
) -> Result<(), CmdError> {
    let recorded = recorded_trees(old);
    let mut finder = Finder::new(extra);
    for r in &recorded {
        let Some(combo) = combos.iter().find(|c| c.context_key() == r.env) else {
            continue;
        };
        let now = finder.tree(combo);
        let problem = match &now {
            Err(why) => Some(format!("now no ROCm tree is found ({why})")),
            Ok(c) if !same_tree(r, c) => Some(format!("this rocsweep would now use {}", c.line())),
            Ok(_) => changed_files(&r.libraries).map(|files| {
                format!("its library files changed since the run recorded them: {files}")
            }),
        };
        if let Some(problem) = problem {
            return Err(refusal(dir, r, combo, &problem));
        }
    }
    Ok(())
}

/// The recorded trees: `rocm_trees`, or in a manifest written before them, the first worker's
/// tree and files (for every combination: such a run had one tree).
fn recorded_trees(m: &Manifest) -> Vec<TreeRecord> {
    if !m.rocm_trees.is_empty() {
        return m.rocm_trees.clone();
    }
    // A run over several trees names each combination's tree itself; its first worker's line
    // is one tree's only.
    let several = crate::spec::expand::several_trees(&m.env_combos);
    let Some(tree) = m
        .backend
        .versions
        .get(TREE_KEY)
        .filter(|t| !t.starts_with("none") && !several)
    else {
        return Vec::new();
    };
    m.env_combos
        .iter()
        .map(EnvCombo::context_key)
        .chain(m.env_combos.is_empty().then(String::new))
        .map(|env| TreeRecord {
            env,
            tree: tree.clone(),
            libraries: m.backend.libraries.clone(),
            ..TreeRecord::default()
        })
        .collect()
}

/// Whether the tree found now is the recorded one: its path where recorded, else the tree
/// part of the recorded line ("prefix /opt/rocm-6.2" of "prefix /opt/rocm-6.2 (from ...)").
fn same_tree(r: &TreeRecord, now: &Choice) -> bool {
    if r.path.is_empty() {
        let label = now.found.tree.label();
        r.tree == label || r.tree.starts_with(&format!("{label} (from "))
    } else {
        Path::new(&r.path) == now.found.tree.path
    }
}

/// The recorded files whose contents are not what was recorded now ("libMIOpen.so.1 (/x/...):
/// SHA-256 1234abcd... now 5678...; ..."), or None when each is as it was.
fn changed_files(recorded: &[LibraryFile]) -> Option<String> {
    let mut now: Vec<LibraryFile> = recorded
        .iter()
        .filter(|f| is_digest(&f.sha256))
        .map(|f| LibraryFile {
            path: f.path.clone(),
            ..LibraryFile::default()
        })
        .collect();
    crate::exec::record::libhash::complete(&mut now);
    let changed: Vec<String> = now
        .iter()
        .filter_map(|n| {
            let was = recorded.iter().find(|f| f.path == n.path)?;
            (was.sha256 != n.sha256).then(|| {
                let short = |s: &str| s.get(..12).unwrap_or(s).to_string();
                let is = if is_digest(&n.sha256) {
                    format!("now {}", short(&n.sha256))
                } else {
                    n.sha256.clone()
                };
                format!("{} (SHA-256 {}, {is})", n.path, short(&was.sha256))
            })
        })
        .collect();
    (!changed.is_empty()).then(|| changed.join("; "))
}

fn refusal(dir: &Path, r: &TreeRecord, combo: &EnvCombo, problem: &str) -> CmdError {
    let d = dir.display();
    let whose = match combo.key().as_str() {
        "" => String::new(),
        k => format!(" (env combination {k})"),
    };
    let go_on = if combo.rocm.is_some() || r.path.is_empty() {
        "restore that tree, or start a new run (rocsweep run SWEEP --out NEW_DIR)".to_string()
    } else {
        format!(
            "resume with the recorded tree (rocsweep run --resume {d} --rocm {}), or start a new run (rocsweep run SWEEP --out NEW_DIR)",
            r.path
        )
    };
    CmdError::BadInput(format!(
        "cannot resume {d}: its rows{whose} were run on the ROCm tree {}, and {problem}; {go_on}; nothing was changed",
        r.tree
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(tree: &str, libs: &[&str]) -> BackendInfo {
        let mut i = BackendInfo::default();
        i.versions.insert(TREE_KEY.into(), tree.into());
        i.libraries = libs
            .iter()
            .map(|p| LibraryFile {
                path: p.to_string(),
                ..LibraryFile::default()
            })
            .collect();
        i
    }

    #[test]
    fn one_record_per_combination_and_each_file_hashed_once() {
        let dir = tempfile::tempdir().expect("tmp");
        let a = dir.path().join("libamdhip64.so.6");
        std::fs::write(&a, b"abc").expect("write");
        let a = a.display().to_string();
        let mut book = TreeBook::new(&[], &[], &[], &[]);
        book.note(
            "rocm=A;X=1",
            "A",
            &info("prefix /a (from --rocm /a)", &[&a]),
        );
        // The second worker of the same combination adds nothing.
        book.note("rocm=A;X=1", "A", &info("prefix /b (from --rocm /b)", &[]));
        std::fs::write(&a, b"changed").expect("write");
        // Another combination mapping the same file takes the digest of this run's first read.
        book.note(
            "rocm=A;X=2",
            "A",
            &info("prefix /a (from --rocm /a)", &[&a]),
        );
        book.note("cpu", "", &BackendInfo::default());
        let r = book.records();
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[0].tree, "prefix /a (from --rocm /a)");
        assert_eq!((r[1].env.as_str(), r[1].rocm.as_str()), ("rocm=A;X=2", "A"));
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(r[0].libraries[0].sha256, abc);
        assert_eq!(r[1].libraries[0].sha256, abc);
        // A resumed run keeps its records and adds none for a combination it has.
        let again = TreeBook::new(&r, &[], &[], &[]);
        assert_eq!(again.records(), r);
    }

    #[test]
    fn a_manifest_without_per_tree_records_is_checked_against_its_first_workers_tree() {
        let dir = tempfile::tempdir().expect("tmp");
        let lib = dir.path().join("lib");
        std::fs::create_dir_all(&lib).expect("mkdir");
        std::fs::write(lib.join("libamdhip64.so.6"), b"").expect("write");
        let choice = discover::choose(&Places {
            flag: Some(dir.path().to_path_buf()),
            ..Places::default()
        })
        .expect("a tree");
        let label = choice.found.tree.label();
        let old = |tree: &str| TreeRecord {
            tree: tree.to_string(),
            ..TreeRecord::default()
        };
        assert!(same_tree(
            &old(&format!("{label} (from $ROCM_PATH=/x)")),
            &choice
        ));
        assert!(!same_tree(
            &old("prefix /opt/rocm-5.7 (from /opt/rocm)"),
            &choice
        ));
        let by_path = TreeRecord {
            path: dir.path().display().to_string(),
            ..old("anything")
        };
        assert!(same_tree(&by_path, &choice));
    }
}

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
use crate::results::manifest::TreeRecord;
use crate::rocm_tree::discover::{self, Choice, Places, ROCM_ENV};
use crate::spec::expand::EnvCombo;
use std::collections::HashMap;

/// The tree a worker of `combo` would choose: the supervisor's environment with the worker's
/// own variables (`extra`: what every worker gets, then the combination's tree and variables).
pub fn tree_of(extra: &[(String, String)], combo: &EnvCombo) -> Result<Choice, String> {
    let mut vars: Vec<(String, String)> = extra.to_vec();
    if let Some(t) = &combo.rocm {
        vars.push((ROCM_ENV.to_string(), t.path.clone()));
    }
    vars.extend(combo.vars.iter().cloned());
    discover::choose(&Places::with_overrides(&vars))
}

/// The trees recorded so far in a run: one per env combination whose worker started.
#[derive(Default)]
pub struct TreeBook {
    records: Vec<TreeRecord>,
    /// Files already hashed this run (by path), so each is read once per run.
    hashed: HashMap<String, LibraryFile>,
    /// Each combination's tree path by context key, from the supervisor's discovery.
    paths: HashMap<String, String>,
}

impl TreeBook {
    /// A book holding `old` (a resumed run's records) and the files of `seen` (the handshakes
    /// the run started with, already hashed). Only a ROCm run has trees to name.
    pub fn new(
        old: &[TreeRecord],
        seen: &[&BackendInfo],
        combos: &[EnvCombo],
        extra: &[(String, String)],
        rocm: bool,
    ) -> TreeBook {
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
            for c in combos {
                if let Ok(choice) = tree_of(extra, c) {
                    let path = choice.found.tree.path.display().to_string();
                    book.paths.insert(c.context_key(), path);
                }
            }
        }
        book
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
            super::libhash::complete(&mut fresh);
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
        });
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
        let mut book = TreeBook::new(&[], &[], &[], &[], false);
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
        let again = TreeBook::new(&r, &[], &[], &[], false);
        assert_eq!(again.records(), r);
    }
}

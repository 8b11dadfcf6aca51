//! Where the run's ROCm came from, for report.html and summary.md: per tree (and per env
//! combination where the combinations of one tree mapped different files), which tree it was,
//! how it was chosen, and a compact table of the library files its workers mapped (file,
//! version, the first 12 hex digits of its SHA-256; the full path and digest are in
//! manifest.json). Made once here; each format only lays it out.

use crate::backend::LibraryFile;
use crate::backend::rocm::provenance::{MIOPEN_KEY, TREE_KEY};
use crate::markup::table::{Cell, Table};
use crate::results::manifest::{Manifest, TreeRecord};

/// One tree as the report shows it: the env combinations that used it with the same files.
pub struct TreeGroup {
    /// "TheRock packages /v/... (from $VIRTUAL_ENV=/v)".
    pub tree: String,
    /// The tree's label in a run over several, else empty.
    pub rocm: String,
    /// The env combinations (context keys) of this group; empty when they are all the tree's.
    pub envs: Vec<String>,
    pub libraries: Vec<LibraryFile>,
    /// What the tree lacks for the device (MIOpen's db or CK libraries), if anything.
    pub note: String,
}

impl TreeGroup {
    /// The line above the group's table: "rocm=LABEL: TREE · env combinations A=1, A=2".
    pub fn heading(&self) -> String {
        let mut s = if self.rocm.is_empty() {
            self.tree.clone()
        } else {
            format!("rocm={}: {}", self.rocm, self.tree)
        };
        if !self.envs.is_empty() {
            let tree = format!("rocm={};", self.rocm);
            let envs: Vec<&str> = self
                .envs
                .iter()
                .map(|e| e.strip_prefix(&tree).unwrap_or(e))
                .map(|e| if e.is_empty() { "(none)" } else { e })
                .collect();
            s.push_str(&format!(" · env combinations {}", envs.join(", ")));
        }
        s
    }

    /// file, version, SHA-256 (short) per library file.
    pub fn table(&self) -> Table {
        let mut t = Table::new(&[("file", false), ("version", false), ("SHA-256", false)])
            .rest_in("manifest.json");
        for f in &self.libraries {
            let name = std::path::Path::new(&f.path)
                .file_name()
                .map_or_else(|| f.path.clone(), |n| n.to_string_lossy().into_owned());
            let sha = f.sha256.get(..12).unwrap_or(&f.sha256).to_string();
            t.push(vec![
                Cell::Titled {
                    text: name,
                    title: f.path.clone(),
                },
                Cell::or_dash(f.version.clone()),
                Cell::Code(if sha.is_empty() { "-".into() } else { sha }),
            ]);
        }
        t
    }
}

/// The run's trees: from `rocm_trees` (combinations of one tree with the same files as one
/// group), or in a manifest written before it, the first worker's tree and files. Empty for a
/// run without ROCm.
pub fn groups(m: &Manifest) -> Vec<TreeGroup> {
    if m.rocm_trees.is_empty() {
        return m
            .backend
            .versions
            .get(TREE_KEY)
            .map(|tree| TreeGroup {
                tree: tree.clone(),
                rocm: String::new(),
                envs: Vec::new(),
                libraries: m.backend.libraries.clone(),
                note: m
                    .backend
                    .versions
                    .get(MIOPEN_KEY)
                    .cloned()
                    .unwrap_or_default(),
            })
            .into_iter()
            .collect();
    }
    let mut out: Vec<(TreeGroup, Vec<String>)> = Vec::new();
    for r in &m.rocm_trees {
        match out.iter_mut().find(|(g, _)| same_files(g, r)) {
            Some((_, envs)) => envs.push(r.env.clone()),
            None => out.push((
                TreeGroup {
                    tree: r.tree.clone(),
                    rocm: r.rocm.clone(),
                    envs: Vec::new(),
                    libraries: r.libraries.clone(),
                    note: r.note.clone(),
                },
                vec![r.env.clone()],
            )),
        }
    }
    // A tree's combinations are named only where they did not all map the same files.
    let per_tree = |rocm: &str| out.iter().filter(|(g, _)| g.rocm == rocm).count();
    let split: Vec<bool> = out.iter().map(|(g, _)| per_tree(&g.rocm) > 1).collect();
    out.into_iter()
        .zip(split)
        .map(|((mut g, envs), split)| {
            if split {
                g.envs = envs;
            }
            g
        })
        .collect()
}

fn same_files(g: &TreeGroup, r: &TreeRecord) -> bool {
    g.rocm == r.rocm
        && g.tree == r.tree
        && g.note == r.note
        && g.libraries.len() == r.libraries.len()
        && g.libraries
            .iter()
            .zip(&r.libraries)
            .all(|(a, b)| a.path == b.path && a.sha256 == b.sha256)
}

/// The section's note under its heading.
pub const NOTE: &str = "The ROCm tree each worker used and how it was chosen, with every library file mapped into it (full paths and SHA-256 in manifest.json).";

#[cfg(test)]
mod tests {
    use super::*;

    fn record(env: &str, rocm: &str, files: &[(&str, &str)]) -> TreeRecord {
        TreeRecord {
            env: env.into(),
            rocm: rocm.into(),
            tree: format!("prefix {rocm} (from --rocm {rocm})"),
            path: rocm.into(),
            note: String::new(),
            libraries: files
                .iter()
                .map(|(p, sha)| LibraryFile {
                    path: p.to_string(),
                    version: "5.0.0".into(),
                    sha256: sha.to_string(),
                    ..LibraryFile::default()
                })
                .collect(),
        }
    }

    #[test]
    fn combinations_of_a_tree_are_named_only_where_their_files_differ() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/release-a");
        let mut m = crate::results::manifest::read(&dir).expect("fixture");
        let sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        m.rocm_trees = vec![
            record("rocm=/a;X=1", "/a", &[("/a/lib/libamdhip64.so.5.0.0", sha)]),
            record("rocm=/a;X=2", "/a", &[("/a/lib/libamdhip64.so.5.0.0", sha)]),
            record("rocm=/b;X=1", "/b", &[("/b/lib/libamdhip64.so.7", sha)]),
            record("rocm=/b;X=2", "/b", &[("/elsewhere/libamdhip64.so.7", sha)]),
        ];
        let g = groups(&m);
        let headings: Vec<String> = g.iter().map(TreeGroup::heading).collect();
        assert_eq!(
            headings,
            [
                "rocm=/a: prefix /a (from --rocm /a)",
                "rocm=/b: prefix /b (from --rocm /b) · env combinations X=1",
                "rocm=/b: prefix /b (from --rocm /b) · env combinations X=2",
            ]
        );
        let t = g[0].table();
        assert_eq!(t.rows.len(), 1);
        assert_eq!(
            t.rows[0].cells[0],
            Cell::Titled {
                text: "libamdhip64.so.5.0.0".into(),
                title: "/a/lib/libamdhip64.so.5.0.0".into()
            }
        );
        assert_eq!(t.rows[0].cells[2], Cell::Code("0123456789ab".into()));
    }
}

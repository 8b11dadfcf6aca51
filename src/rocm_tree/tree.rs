//! What a ROCm tree is and how one is recognised on disk: a prefix (`/opt/rocm-6.4.1`), a `lib`
//! directory, TheRock's Python packages (`_rocm_sdk_core*` + `_rocm_sdk_libraries*` in a
//! site-packages directory), or PyTorch's bundled copy (`torch/lib`). Pure filesystem logic:
//! nothing here loads a library. Which tree a process uses is `discover.rs`.

use std::path::{Path, PathBuf};

/// The HIP runtime's file names, newest first; a tree is a place where one of these exists.
pub const HIP_NAMES: &[&str] = &[
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
];

/// How a tree is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `PREFIX/lib/libamdhip64.so*` (`/opt/rocm-6.4.1`, `/usr`).
    Prefix,
    /// A directory holding the libraries themselves.
    LibDir,
    /// TheRock's wheels: `_rocm_sdk_core*/lib` and `_rocm_sdk_libraries*/lib`.
    TheRock,
    /// pytorch.org's ROCm wheels: `torch/lib` with bare names.
    TorchBundle,
    /// The system loader's directories (a distribution's packages: `/usr/lib/x86_64-linux-gnu`
    /// and `/usr/lib` together).
    System,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Prefix => "prefix",
            Layout::LibDir => "lib dir",
            Layout::TheRock => "TheRock packages",
            Layout::TorchBundle => "torch bundle",
            Layout::System => "system libraries",
        }
    }
}

/// One ROCm tree: where its libraries are opened from, and what belongs to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    pub layout: Layout,
    /// The path that names this tree (`--rocm PATH` with it finds this tree first): the prefix,
    /// the lib dir, the site-packages directory (TheRock) or the `torch` directory.
    pub path: PathBuf,
    /// Directories libraries are opened from, in order.
    pub lib_dirs: Vec<PathBuf>,
    /// Directories whose files belong to the tree (the in-process check of what is mapped).
    pub roots: Vec<PathBuf>,
    /// The HIP runtime's file.
    pub hip: PathBuf,
}

impl Tree {
    /// "TheRock packages /v/lib/python3.12/site-packages".
    pub fn label(&self) -> String {
        format!("{} {}", self.layout.name(), self.path.display())
    }

    /// The first of `names` present in the tree's lib directories (by absolute path).
    pub fn find(&self, names: &[&str]) -> Option<PathBuf> {
        self.lib_dirs
            .iter()
            .flat_map(|d| names.iter().map(move |n| d.join(n)))
            .find(|p| p.is_file())
    }

    /// "libX.so.1, libX.so in DIR1, DIR2": what `find` looked for, for messages.
    pub fn looked_for(&self, names: &[&str]) -> String {
        let dirs: Vec<String> = self
            .lib_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        format!("{} in {}", names.join(", "), dirs.join(", "))
    }
}

/// The HIP runtime in `dir`, if there is one.
fn hip_in(dir: &Path) -> Option<PathBuf> {
    HIP_NAMES.iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

/// Subdirectories of `dir` whose names start with `prefix`, sorted (missing dir: none).
pub fn subdirs_starting(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// A prefix (`P/lib`) or a lib dir (`P`) holding a HIP runtime.
fn plain(path: &Path) -> Option<Tree> {
    let (layout, lib) = if hip_in(path).is_some() {
        (Layout::LibDir, path.to_path_buf())
    } else {
        (Layout::Prefix, path.join("lib"))
    };
    let hip = hip_in(&lib)?;
    let is_torch = path.file_name().is_some_and(|n| n == "torch") && layout == Layout::Prefix;
    let root = if layout == Layout::LibDir {
        lib.clone()
    } else {
        path.to_path_buf()
    };
    Some(Tree {
        layout: if is_torch {
            Layout::TorchBundle
        } else {
            layout
        },
        path: path.to_path_buf(),
        lib_dirs: vec![lib],
        roots: vec![root],
        hip,
    })
}

/// The system tree whose HIP runtime is in `dir`, one of the loader's directories `all`: a
/// distribution spreads its packages over them (Debian: ROCm SMI in /usr/lib, HIP in
/// /usr/lib/x86_64-linux-gnu), so every one of them belongs to it, `dir` first.
pub fn system(dir: &Path, all: &[PathBuf]) -> Option<Tree> {
    let hip = hip_in(dir)?;
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(all.iter().filter(|d| *d != dir && d.is_dir()).cloned());
    Some(Tree {
        layout: Layout::System,
        path: dir.to_path_buf(),
        lib_dirs: dirs.clone(),
        roots: dirs,
        hip,
    })
}

/// TheRock's packages in one site-packages directory: the first `_rocm_sdk_core*` with a HIP
/// runtime, and every `_rocm_sdk_libraries*` (each suffix form) after it.
fn therock(site: &Path) -> Option<Tree> {
    let (core, hip) = subdirs_starting(site, "_rocm_sdk_core")
        .into_iter()
        .find_map(|c| hip_in(&c.join("lib")).map(|h| (c, h)))?;
    let libraries = subdirs_starting(site, "_rocm_sdk_libraries");
    let mut lib_dirs = vec![core.join("lib")];
    lib_dirs.extend(libraries.iter().map(|l| l.join("lib")));
    let mut roots = vec![core];
    roots.extend(libraries);
    // The device files' packages (`_rocm_sdk_device*`, older `_rocm_sdk_libraries_<gfx>`) and
    // anything else of the SDK belong to the tree too. A set, not a scan of the list: a
    // site-packages may hold thousands of them (issue 40, D7: quadratic before).
    let mut seen: std::collections::HashSet<PathBuf> = roots.iter().cloned().collect();
    for extra in subdirs_starting(site, "_rocm_sdk_") {
        if seen.insert(extra.clone()) {
            roots.push(extra);
        }
    }
    Some(Tree {
        layout: Layout::TheRock,
        path: site.to_path_buf(),
        lib_dirs,
        roots,
        hip,
    })
}

/// The site-packages directories of a Python environment rooted at `env` (or `env` itself
/// when it is one): `lib/python3*/site-packages`, `lib/python3/dist-packages`, `lib64/...`.
pub fn site_dirs(env: &Path) -> Vec<PathBuf> {
    let named = |p: &Path| {
        p.file_name()
            .is_some_and(|n| n == "site-packages" || n == "dist-packages")
    };
    if named(env) {
        return vec![env.to_path_buf()];
    }
    let mut v = Vec::new();
    for lib in ["lib", "lib64"] {
        for py in subdirs_starting(&env.join(lib), "python") {
            for sub in ["site-packages", "dist-packages"] {
                let d = py.join(sub);
                if d.is_dir() && !v.contains(&d) {
                    v.push(d);
                }
            }
        }
    }
    let win = env.join("Lib").join("site-packages");
    if win.is_dir() {
        v.push(win);
    }
    v
}

/// The trees of a Python environment: per site-packages directory, TheRock's packages first,
/// then torch's bundled copy.
pub fn python_trees(env: &Path) -> Vec<Tree> {
    let mut v = Vec::new();
    for site in site_dirs(env) {
        v.extend(therock(&site));
        v.extend(plain(&site.join("torch")).filter(|t| t.layout == Layout::TorchBundle));
    }
    v
}

/// The environment a `python` interpreter at `exe` belongs to (`ENV/bin/python3` -> `ENV`).
pub fn interpreter_env(exe: &Path) -> Option<PathBuf> {
    let name = exe.file_name()?.to_string_lossy().into_owned();
    if !name.starts_with("python") || exe.is_dir() {
        return None;
    }
    exe.parent()?.parent().map(Path::to_path_buf)
}

/// Every tree `path` names, the one a run would use first: a lib dir, a prefix, a `python`
/// interpreter's environment, or a Python environment (or site-packages) directory.
pub fn trees_at(path: &Path) -> Vec<Tree> {
    if let Some(env) = interpreter_env(path) {
        return python_trees(&env);
    }
    let mut v: Vec<Tree> = plain(path).into_iter().collect();
    v.extend(python_trees(path));
    v
}

/// What `trees_at` looks for, for the message when it finds nothing.
pub fn looked_for_at(path: &Path) -> String {
    let p = path.display();
    format!(
        "looked for {} in {p}, {p}/lib, {p}/lib/python3*/site-packages/_rocm_sdk_core*/lib and \
         {p}/lib/python3*/site-packages/torch/lib",
        HIP_NAMES.join(", ")
    )
}

/// What `python_trees` looks for in the environment `env`, for the message when it finds
/// nothing.
pub fn looked_for_in_env(env: &Path) -> String {
    let p = env.display();
    format!(
        "looked for {} in {p}/lib/python3*/site-packages/_rocm_sdk_core*/lib and \
         {p}/lib/python3*/site-packages/torch/lib",
        HIP_NAMES.join(", ")
    )
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;

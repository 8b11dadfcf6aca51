//! Which ROCm tree a process uses, chosen as a whole, and every tree on the machine (for
//! `probe`). Sources, in order: `--rocm PATH`, `$ROCM_PATH`, the active Python environment
//! (`$VIRTUAL_ENV`, `$CONDA_PREFIX`, then the `python3` on PATH), `/opt/rocm`, then the
//! system loader's directories. Pure filesystem logic over a snapshot of the environment
//! ([`Places`]), so that tests can lay trees out in temporary directories.

use super::tree::{self, Tree};
use std::path::{Path, PathBuf};

/// What `--rocm PATH` (and its alias `--rocm-lib-dir`) exports, so that workers see it.
pub const ROCM_ENV: &str = "ROCSWEEP_ROCM";
/// The old name of [`ROCM_ENV`], still read.
pub const LIB_DIR_ENV: &str = "ROCSWEEP_ROCM_LIB_DIR";
/// Where `rocm` and `rocm-*` are looked for (default `/opt`; tests point it elsewhere).
pub const OPT_ENV: &str = "ROCSWEEP_OPT_DIR";

/// The part of the machine's state that decides where ROCm is.
#[derive(Clone, Debug, Default)]
pub struct Places {
    pub flag: Option<PathBuf>,
    pub rocm_path: Option<PathBuf>,
    pub virtual_env: Option<PathBuf>,
    pub conda_prefix: Option<PathBuf>,
    /// The PATH entries, in order.
    pub path: Vec<PathBuf>,
    /// `$PYENV_VERSION` (a pyenv shim's interpreter is chosen by it or pyenv's version file).
    pub pyenv_version: Option<String>,
    /// `$HOME`: `pip install --user` puts packages in `~/.local/lib/python3*/site-packages`.
    pub home: Option<PathBuf>,
    pub opt: PathBuf,
    /// The dynamic loader's directories: LD_LIBRARY_PATH, ld.so.conf, then the standard ones.
    pub loader_dirs: Vec<PathBuf>,
}

/// How a variable is read: the process's own environment, or one a worker would get.
type Lookup<'a> = &'a dyn Fn(&str) -> Option<std::ffi::OsString>;

impl Places {
    pub fn from_env() -> Places {
        Places::from_lookup(&|name| std::env::var_os(name))
    }

    /// The places of a process whose environment is this one with `overrides` set (later
    /// entries win): what a worker started with them would choose. The supervisor uses it to
    /// name each env combination's tree without starting a worker (manifest, `--resume`).
    pub fn with_overrides(overrides: &[(String, String)]) -> Places {
        Places::from_lookup(&|name| {
            overrides
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into())
                .or_else(|| std::env::var_os(name))
        })
    }

    fn from_lookup(get: Lookup) -> Places {
        let var = |name: &str| get(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let mut loader_dirs: Vec<PathBuf> = get("LD_LIBRARY_PATH")
            .map(|v| std::env::split_paths(&v).collect())
            .unwrap_or_default();
        loader_dirs.extend(ld_so_conf(Path::new("/etc/ld.so.conf")));
        for d in [
            "/usr/lib/x86_64-linux-gnu",
            "/lib/x86_64-linux-gnu",
            "/usr/lib64",
            "/lib64",
            "/usr/lib",
            "/lib",
        ] {
            loader_dirs.push(PathBuf::from(d));
        }
        // By their real paths, each once (/lib is /usr/lib on a merged-/usr system).
        let mut real: Vec<PathBuf> = Vec::new();
        for d in loader_dirs
            .into_iter()
            .filter(|d| !d.as_os_str().is_empty())
        {
            let d = std::fs::canonicalize(&d).unwrap_or(d);
            if !real.contains(&d) {
                real.push(d);
            }
        }
        Places {
            flag: var(ROCM_ENV).or_else(|| var(LIB_DIR_ENV)),
            rocm_path: var("ROCM_PATH"),
            virtual_env: var("VIRTUAL_ENV"),
            conda_prefix: var("CONDA_PREFIX"),
            path: get("PATH")
                .map(|v| std::env::split_paths(&v).collect())
                .unwrap_or_default(),
            pyenv_version: get("PYENV_VERSION")
                .map(|v| v.to_string_lossy().into_owned())
                .filter(|v| !v.is_empty()),
            home: var("HOME"),
            opt: var(OPT_ENV).unwrap_or_else(|| PathBuf::from("/opt")),
            loader_dirs: real,
        }
    }
}

/// The directories an ld.so.conf names, following `include` lines one level deep.
fn ld_so_conf(file: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(pattern) = line.strip_prefix("include") {
            // Only the form every distribution ships: DIR/*.conf.
            let dir = Path::new(pattern.trim()).parent().map(Path::to_path_buf);
            let mut confs: Vec<PathBuf> = dir
                .and_then(|d| std::fs::read_dir(d).ok())
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "conf"))
                .collect();
            confs.sort();
            for c in confs {
                let Ok(t) = std::fs::read_to_string(&c) else {
                    continue;
                };
                v.extend(
                    t.lines()
                        .map(str::trim)
                        .filter(|l| l.starts_with('/'))
                        .map(PathBuf::from),
                );
            }
        } else if line.starts_with('/') {
            v.push(PathBuf::from(line));
        }
    }
    v
}

/// Checks a `--rocm` value and makes it absolute (a bare `python3` is looked up on PATH): Err
/// (a usage error) naming the path and what was looked for when no HIP runtime is there.
pub fn resolve_flag(value: &Path) -> Result<PathBuf, String> {
    if value == Path::new(SYSTEM) && !value.exists() {
        return if system_trees(&Places::from_env()).is_empty() {
            Err(format!(
                "--rocm system: no HIP runtime in the system loader's directories ({})",
                Places::from_env()
                    .loader_dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        } else {
            Ok(value.to_path_buf())
        };
    }
    let bare = value.components().count() == 1 && !value.exists();
    let on_path = bare
        .then(|| {
            std::env::var_os("PATH")
                .map(|v| {
                    std::env::split_paths(&v)
                        .map(|d| d.join(value))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
                .into_iter()
                .find(|p| p.is_file())
        })
        .flatten();
    let path = on_path.unwrap_or_else(|| value.to_path_buf());
    let path = std::path::absolute(&path).unwrap_or(path);
    if let Some(why) = crate::error::path_problem(&path) {
        return Err(format!("--rocm {}: {why}", value.display()));
    }
    // A Python interpreter names its environment (a pyenv shim: the version it selects), and
    // the message lists that environment's places, not the interpreter's path with /lib.
    if let Some(own) = tree::interpreter_env(&path) {
        let Some(env) = python_env(&path, &Places::from_env()) else {
            return Err(format!(
                "--rocm {}: a Python interpreter whose environment cannot be told (a pyenv shim \
                 with no version selected?); give the environment's directory",
                path.display()
            ));
        };
        if tree::python_trees(&env).is_empty() {
            return Err(format!(
                "--rocm {}: no HIP runtime in this Python's environment {}; {}",
                path.display(),
                env.display(),
                tree::looked_for_in_env(&env)
            ));
        }
        // A pyenv shim's own directory is not its environment: the environment is named.
        return Ok(if own == env { path } else { env });
    }
    if tree::trees_at(&path).is_empty() {
        return Err(format!(
            "--rocm {}: no HIP runtime there; {}",
            path.display(),
            tree::looked_for_at(&path)
        ));
    }
    Ok(path)
}

/// Where a tree was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Flag(PathBuf),
    RocmPath(PathBuf),
    VirtualEnv(PathBuf),
    CondaPrefix(PathBuf),
    /// The `python3` on PATH (the interpreter's path).
    PythonOnPath(PathBuf),
    /// The user's own site-packages (`pip install --user`), `~/.local`.
    UserSite(PathBuf),
    OptRocm(PathBuf),
    /// `/opt/rocm-X.Y` (listed by probe; a run uses one only when named).
    OptVersioned(PathBuf),
    Loader(PathBuf),
}

impl Source {
    pub fn describe(&self) -> String {
        match self {
            Source::Flag(p) => format!("--rocm {}", p.display()),
            Source::RocmPath(p) => format!("$ROCM_PATH={}", p.display()),
            Source::VirtualEnv(p) => format!("$VIRTUAL_ENV={}", p.display()),
            Source::CondaPrefix(p) => format!("$CONDA_PREFIX={}", p.display()),
            Source::PythonOnPath(p) => format!("python3 on PATH ({})", p.display()),
            Source::UserSite(p) => format!("the user's site-packages ({})", p.display()),
            Source::OptRocm(p) => p.display().to_string(),
            Source::OptVersioned(p) => format!("{} (used only when named)", p.display()),
            Source::Loader(_) => "the system loader's path".to_string(),
        }
    }
}

/// A tree and where it was found.
#[derive(Clone, Debug)]
pub struct Found {
    pub tree: Tree,
    pub source: Source,
}

/// The tree a process uses: the first source in the order that has one, and notes about the
/// sources before it that were set but hold no ROCm (`ROCM_PATH` pointing nowhere).
#[derive(Clone, Debug)]
pub struct Choice {
    pub found: Found,
    pub notes: Vec<String>,
}

impl Choice {
    /// "TheRock packages /v/... (from $VIRTUAL_ENV=/v)".
    pub fn line(&self) -> String {
        format!(
            "{} (from {})",
            self.found.tree.label(),
            self.found.source.describe()
        )
    }
}

/// The environment of the first `python3` on PATH (a pyenv shim: the version it selects).
fn python_on_path(p: &Places) -> Option<(PathBuf, PathBuf)> {
    let exe = p
        .path
        .iter()
        .map(|d| d.join("python3"))
        .find(|e| e.is_file())?;
    python_env(&exe, p).map(|env| (exe, env))
}

/// The environment of the Python interpreter at `exe`; through a pyenv shim, the version it
/// selects (`$PYENV_VERSION`, else pyenv's `version` file).
fn python_env(exe: &Path, p: &Places) -> Option<PathBuf> {
    let bin = exe.parent()?;
    if bin.file_name().is_some_and(|n| n == "shims") {
        let root = bin.parent()?;
        let version = p.pyenv_version.clone().or_else(|| {
            std::fs::read_to_string(root.join("version"))
                .ok()
                .and_then(|t| t.lines().next().map(|l| l.trim().to_string()))
        })?;
        return Some(root.join("versions").join(version));
    }
    tree::interpreter_env(exe)
}

/// `--rocm system`: the system loader's tree, whatever else is set.
pub const SYSTEM: &str = "system";

/// The system trees: one per loader directory holding a HIP runtime.
fn system_trees(p: &Places) -> Vec<(PathBuf, Tree)> {
    p.loader_dirs
        .iter()
        .filter_map(|d| tree::system(d, &p.loader_dirs).map(|t| (d.clone(), t)))
        .collect()
}

/// The trees `--rocm VALUE` names.
fn flag_trees(p: &Places, value: &Path) -> Vec<Tree> {
    if value == Path::new(SYSTEM) {
        system_trees(p).into_iter().map(|(_, t)| t).collect()
    } else {
        tree::trees_at(value)
    }
}

/// The sources in the order a run tries them, each with the trees it holds (first = used).
fn ordered(p: &Places) -> Vec<(Source, Vec<Tree>)> {
    let mut v = Vec::new();
    if let Some(f) = &p.flag {
        v.push((Source::Flag(f.clone()), flag_trees(p, f)));
    }
    if let Some(r) = &p.rocm_path {
        v.push((Source::RocmPath(r.clone()), tree::trees_at(r)));
    }
    if let Some(e) = &p.virtual_env {
        v.push((Source::VirtualEnv(e.clone()), tree::python_trees(e)));
    }
    if let Some(e) = &p.conda_prefix {
        v.push((Source::CondaPrefix(e.clone()), tree::python_trees(e)));
    }
    if let Some((exe, env)) = python_on_path(p) {
        v.push((Source::PythonOnPath(exe), tree::python_trees(&env)));
    }
    if let Some(home) = &p.home {
        let local = home.join(".local");
        v.push((Source::UserSite(local.clone()), tree::python_trees(&local)));
    }
    let opt_rocm = p.opt.join("rocm");
    v.push((Source::OptRocm(opt_rocm.clone()), tree::trees_at(&opt_rocm)));
    for (d, t) in system_trees(p) {
        v.push((Source::Loader(d), vec![t]));
    }
    v
}

/// The tree a run uses, or why there is none (every place looked at).
pub fn choose(p: &Places) -> Result<Choice, String> {
    let mut notes = Vec::new();
    for (source, trees) in ordered(p) {
        if let Some(t) = trees.into_iter().next() {
            return Ok(Choice {
                found: Found { tree: t, source },
                notes,
            });
        }
        match &source {
            Source::Flag(f) => {
                return Err(format!(
                    "--rocm {}: no HIP runtime there; {}",
                    f.display(),
                    tree::looked_for_at(f)
                ));
            }
            Source::RocmPath(_) | Source::VirtualEnv(_) | Source::CondaPrefix(_) => {
                notes.push(format!("{} holds no HIP runtime", source.describe()));
            }
            _ => {}
        }
    }
    let mut places = vec![
        "$ROCM_PATH, $VIRTUAL_ENV, $CONDA_PREFIX, the python3 on PATH".to_string(),
        p.opt.join("rocm").display().to_string(),
    ];
    places.extend(p.loader_dirs.iter().map(|d| d.display().to_string()));
    Err(format!(
        "no ROCm tree found (no {}); looked in {}{}",
        tree::HIP_NAMES.join(", "),
        places.join(", "),
        if notes.is_empty() {
            String::new()
        } else {
            format!("; {}", notes.join("; "))
        }
    ))
}

/// Every tree on the machine, the one a run would use first, each once (by its HIP runtime's
/// real file), with where it was first found; `/opt/rocm-*` after `/opt/rocm`.
pub fn all(p: &Places) -> Vec<Found> {
    let mut sources = ordered(p);
    let loader_at = sources
        .iter()
        .position(|(s, _)| matches!(s, Source::Loader(_)))
        .unwrap_or(sources.len());
    let versioned: Vec<(Source, Vec<Tree>)> = tree::subdirs_starting(&p.opt, "rocm-")
        .into_iter()
        .map(|d| (Source::OptVersioned(d.clone()), tree::trees_at(&d)))
        .collect();
    let _ = sources.splice(loader_at..loader_at, versioned);
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut v = Vec::new();
    for (source, trees) in sources {
        for t in trees {
            let key = std::fs::canonicalize(&t.hip).unwrap_or_else(|_| t.hip.clone());
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            v.push(Found {
                tree: t,
                source: source.clone(),
            });
        }
    }
    v
}

#[cfg(test)]
#[path = "discover_tests.rs"]
mod tests;

//! manifest.json: everything needed to interpret and reproduce a run.

use super::shard::ShardRecord;
use crate::backend::BackendInfo;
use crate::spec::Sweep;
use crate::spec::expand::EnvCombo;
use crate::spec::policy::Policies;
pub use crate::spec::secret::{
    MASKED, is_masked, is_secret, shown, sweep_secret_label, sweep_value_shown,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub manifest_version: u32,
    pub rocsweep_version: String,
    pub git_commit: String,
    pub command_line: Vec<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub host: Host,
    pub backend: BackendInfo,
    pub sweep: SweepInfo,
    pub policies: Policies,
    pub env_combos: Vec<EnvCombo>,
    /// The environment of the supervisor, complete (each env combination adds to it).
    pub environment: BTreeMap<String, String>,
    pub units_planned: u64,
    /// Units per status, filled in when the run finishes.
    pub counts: BTreeMap<String, u64>,
    /// Combinations dropped because they form no valid problem (first reason kept as an example).
    pub invalid_combinations: u64,
    pub invalid_example: Option<String>,
    /// When the run was resumed (`--resume`), in order.
    #[serde(default)]
    pub resumed: Vec<String>,
    /// Why the run stopped before its last unit, if it did.
    #[serde(default)]
    pub stopped: Option<String>,
    /// The slice of the sweep this run covers (`--shard`, `--shard-from-env`); none: all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
    /// The device slots of `--devices` in the latest session (a resume reuses them); empty
    /// without `--devices`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<usize>,
    /// Set when this directory was made by `rocsweep merge` from shard run directories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<MergeInfo>,
    /// The device each env combination's worker reported (env key -> device), which an env
    /// variable can change (RAYON_NUM_THREADS, HIP_VISIBLE_DEVICES, HSA_OVERRIDE_GFX_VERSION);
    /// `backend.devices` is what the first worker reported.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_devices: BTreeMap<String, String>,
    /// A run over several backends (`backend = ["cpu", "torch"]`): what each one's first worker
    /// said, in the sweep's order (`backend` is the first of them). Empty in a one-backend run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<crate::backend::BackendInfo>,
    /// ROCm: one entry per env combination (and tree) whose worker started, with the tree it
    /// used and every library file it mapped. Empty for other backends and in manifests written
    /// before rocsweep 0.x kept it (their provenance is `backend`'s, the first worker's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rocm_trees: Vec<TreeRecord>,
}

/// The ROCm tree one env combination's workers used, and what they mapped from it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TreeRecord {
    /// The env combination's context key (units' env key: `rocm=LABEL;A=1` in a run over
    /// several trees, `A=1` otherwise; empty for a run without env variables).
    pub env: String,
    /// The tree's label in a run over several (results.csv's `rocm` column), else empty.
    #[serde(default)]
    pub rocm: String,
    /// Which tree and how it was chosen, as the worker said it ("TheRock packages /v/lib/
    /// python3.12/site-packages (from $VIRTUAL_ENV=/v)").
    pub tree: String,
    /// The tree's path (what `--rocm` takes to find it again); empty where unknown.
    #[serde(default)]
    pub path: String,
    /// Every vendor library file mapped into the worker: path, soname, version, SHA-256.
    #[serde(default)]
    pub libraries: Vec<crate::backend::LibraryFile>,
    /// What the tree lacks for the device that its libraries run without (MIOpen's db or CK
    /// libraries for the target), as the worker said it; empty when nothing.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// What `rocsweep merge` joined, and what it found missing (with `--allow-missing`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MergeInfo {
    pub merged_at: String,
    pub shard_count: u32,
    pub shards: Vec<MergedShard>,
    /// Shards `I/N` no directory was given for.
    pub missing_shards: Vec<String>,
    /// Planned (case, solver, env combination) entries no shard has a row for.
    pub missing_units: u64,
    /// Up to 20 of them: `<case id> <parameters> solver=<s> [env]`.
    pub missing_examples: Vec<String>,
}

/// One shard directory of a merge, with the facts that differ between shards.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    pub dir: String,
    pub shard: String,
    pub hostname: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub resumed: Vec<String>,
    pub stopped: Option<String>,
    pub devices: Vec<String>,
    pub rows: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub os: String,
    pub kernel: String,
    pub arch: String,
    pub cpu: String,
    pub logical_cpus: usize,
    pub memory_bytes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepInfo {
    pub name: String,
    pub op: String,
    pub path: String,
    pub sha256: String,
    pub text: String,
    pub overrides: Vec<String>,
    /// The sweep sets credentials (`HF_TOKEN` in `[env]`): `text` holds them masked, and a
    /// resume reads the sweep file itself (its SHA-256 must still be `sha256`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub masked: bool,
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

impl Host {
    pub fn current() -> Host {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_kb = meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        let os = read_trim("/etc/os-release")
            .and_then(|s| {
                s.lines().find(|l| l.starts_with("PRETTY_NAME=")).map(|l| {
                    l.trim_start_matches("PRETTY_NAME=")
                        .trim_matches('"')
                        .to_string()
                })
            })
            .unwrap_or_else(|| std::env::consts::OS.to_string());
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
            })
            .unwrap_or_default();
        Host {
            hostname: read_trim("/proc/sys/kernel/hostname").unwrap_or_default(),
            os,
            kernel: read_trim("/proc/sys/kernel/osrelease").unwrap_or_default(),
            arch: std::env::consts::ARCH.to_string(),
            cpu,
            logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes: mem_kb * 1024,
        }
    }
}

impl SweepInfo {
    pub fn of(s: &Sweep) -> SweepInfo {
        SweepInfo {
            name: s.name.clone(),
            op: s.op.name().to_string(),
            path: s.source.path.clone(),
            sha256: s.source.sha256.clone(),
            text: s
                .masked_text
                .clone()
                .unwrap_or_else(|| s.source.text.to_string()),
            overrides: s.overrides.clone(),
            masked: s.masked_text.is_some(),
        }
    }
}

/// Name prefixes of variables that can change what a run does: the vendors' runtimes and
/// libraries, frameworks, threading, loaders, schedulers, and rocsweep's own.
const RELEVANT_PREFIXES: &[&str] = &[
    "ROC",
    "HIP",
    "HSA",
    "MIOPEN",
    "HIPBLASLT",
    "AMD",
    "GPU_",
    "CUDA",
    "CUDNN",
    "CUBLAS",
    "CUFFT",
    "CURAND",
    "NVIDIA",
    "NCCL",
    "TORCH",
    "PYTORCH",
    "OMP_",
    "GOMP_",
    "KMP_",
    "MKL_",
    "OPENBLAS_",
    "RAYON_",
    "LD_",
    "MALLOC_",
    "SLURM_",
    "RUST_",
];
/// Whole names that can change what a run does.
const RELEVANT_NAMES: &[&str] = &["PATH", "JOB_COMPLETION_INDEX", "HOSTNAME", "LANG", "TZ"];
/// The variables of the environment that can affect a run (see [`RELEVANT_PREFIXES`] and
/// [`RELEVANT_NAMES`]), plus any the sweep itself sets (`extra`), each value masked when its
/// name looks like a credential's. Values that are not UTF-8 are kept lossily.
pub fn environment(extra: &[String]) -> BTreeMap<String, String> {
    std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .filter(|(k, _)| {
            RELEVANT_NAMES.contains(&k.as_str())
                || RELEVANT_PREFIXES.iter().any(|p| k.starts_with(p))
                || extra.contains(k)
        })
        .map(|(k, v)| {
            let v = shown(&k, &v).to_string();
            (k, v)
        })
        .collect()
}

/// Writes the manifest atomically (temp file, fsync, rename), so readers never see half of it.
pub fn write(dir: &Path, m: &Manifest) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(m).map_err(std::io::Error::other)?;
    crate::results::atomic::write(&dir.join("manifest.json"), format!("{text}\n"))
}

/// The manifest versions this rocsweep reads (and the one it writes: the last).
pub const READABLE_VERSIONS: &[u32] = &[1];

/// Reads a run directory's manifest: a regular file (see `rundir::open_file`) of a version
/// this rocsweep knows. Errors name the file; a directory with no manifest is "not a run
/// directory".
pub fn read(dir: &Path) -> Result<Manifest, String> {
    let path = dir.join("manifest.json");
    let text = crate::results::rundir::read_text(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound if dir.is_dir() => {
            format!("{}: not a run directory (no manifest.json)", dir.display())
        }
        std::io::ErrorKind::NotFound => format!(
            "{}: not a run directory ({})",
            dir.display(),
            crate::error::path_problem(dir).unwrap_or_else(|| "no such directory".into())
        ),
        _ => crate::results::rundir::describe(&path, &e),
    })?;
    let at = |e: serde_json::Error| {
        format!(
            "{}: line {}, column {}: {e}",
            path.display(),
            e.line(),
            e.column()
        )
    };
    // The version first, so that a manifest of another version is named as such rather than
    // as a field this version does not know.
    #[derive(serde::Deserialize)]
    struct Version {
        manifest_version: u32,
    }
    let v: Version = serde_json::from_str(&text).map_err(at)?;
    if !READABLE_VERSIONS.contains(&v.manifest_version) {
        return Err(format!(
            "{}: manifest_version {} is not one this rocsweep ({}) reads (it reads {}); use the rocsweep that wrote it",
            path.display(),
            v.manifest_version,
            env!("CARGO_PKG_VERSION"),
            READABLE_VERSIONS
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    serde_json::from_str(&text).map_err(at)
}

impl Manifest {
    /// What the first worker of backend `name` said: its entry in `backends` in a run of
    /// several, else `backend`.
    pub fn backend_info(&self, name: &str) -> &crate::backend::BackendInfo {
        self.backends
            .iter()
            .find(|b| b.backend == name)
            .unwrap_or(&self.backend)
    }

    /// The Python that ran backend `name`'s torch worker (its `python` version line, without
    /// the note on how it was chosen); None for other backends.
    pub fn torch_python(&self, name: &str) -> Option<String> {
        if name != "torch" {
            return None;
        }
        let line = self.backend_info(name).versions.get("python")?;
        let path = line.split(" (").next().unwrap_or(line).trim();
        (!path.is_empty()).then(|| path.to_string())
    }
}

//! What a run is before anything is written: the sweep (from its file, or from the manifest of
//! the run being resumed), backend, run directory, shard, env combinations, strategy and
//! trials, with every check that can refuse the run as bad input. Then the pieces `run` builds
//! from it: the worker spec, the policies, a new run's manifest, and what a resume found.

use crate::backend::BackendInfo;
use crate::build_info;
use crate::error::CmdError;
use crate::exec::plan::options::RunOptions;
use crate::exec::plan::resume::Resume;
use crate::exec::plan::shard::{self, Shard, ShardRecord};
use crate::exec::plan::strategy_plan::{self, Plan};
use crate::exec::plan::units;
use crate::exec::supervise::devices::{self, DeviceSel};
use crate::exec::supervise::handle::WorkerSpec;
use crate::results::manifest::{self, Host, Manifest, SweepInfo};
use crate::results::rundir;
use crate::results::status::Status;
use crate::spec::expand::{EnvCombo, RocmTree};
use crate::spec::policy::Policies;
use crate::spec::{self, Sweep};
use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};

/// A run, resolved and checked, with the options it was asked for.
pub struct Setup {
    pub opts: RunOptions,
    pub sweep: Sweep,
    /// The file's steps when it is a sequence (`[[step]]`, issue 43); `sweep` then holds its
    /// header, environment and policies.
    pub sequence: Option<spec::sequence::Sequence>,
    /// The first (or only) backend: what the run's first workers open.
    pub backend: String,
    /// Every backend the run names, in order (one, or several run side by side).
    pub backends: Vec<String>,
    /// The one ROCm tree the sweep names (`rocm = "PATH"`), resolved: given to every worker.
    /// (`--rocm PATH` once is exported by `main`; several trees are contexts in `combos`.)
    pub rocm_env: Option<String>,
    pub dir: PathBuf,
    /// The manifest of the run being resumed.
    pub old: Option<Manifest>,
    pub shard_record: Option<ShardRecord>,
    pub shard: Option<Shard>,
    pub combos: Vec<EnvCombo>,
    /// Axes x env combinations, before invalid combinations are dropped.
    pub product: u128,
    pub strategy: Option<Plan>,
    pub trials: u32,
    /// `--processes N` (or the sweep's, or the resumed run's): 0 when not asked.
    pub processes: u32,
}

impl Setup {
    pub fn new(opts: RunOptions) -> Result<Setup, CmdError> {
        let Prepared {
            sweep,
            sequence,
            backends,
            dir,
            manifest: old,
            shard: shard_record,
        } = load(&opts)?;
        let shard = shard_record
            .as_ref()
            .map(|r| r.shard())
            .transpose()
            .map_err(|e| {
                CmdError::BadInput(format!("{}: manifest.json: shard: {e}", dir.display()))
            })?;
        let trees = trees_of(&opts, &sweep, old.as_ref())?;
        // Counted before they are built (the loader bounds them: spec::MAX_ENV_COMBOS).
        let product = sweep
            .product_size()
            .saturating_mul(sweep.env_combo_count())
            .saturating_mul(backends.len() as u128)
            .saturating_mul(trees.len().max(1) as u128);
        if product > opts.max_units as u128 && !opts.force && old.is_none() {
            return Err(CmdError::BadInput(format!(
                "{}: the sweep's product is {product} combinations (axes x env combinations), more than the cap of {}; \
                 narrow the axes, raise --max-units, or pass --force",
                sweep.source.path, opts.max_units
            )));
        }
        let rocm_env = match trees.as_slice() {
            [one] => Some(one.path.clone()),
            _ => None,
        };
        let combos = crate::spec::expand::with_backends(
            crate::spec::expand::with_trees(sweep.env_combos(), &trees),
            &backends,
        );
        let backend = backends.first().cloned().unwrap_or_else(|| "auto".into());
        if let Some(seq) = &sequence {
            refuse_for_sequence(&opts, seq)?;
        }
        let strategy = strategy_plan::resolve(&opts, &sweep)?;
        let processes = match old.as_ref() {
            Some(m) => m.policies.timing.processes,
            None => opts.processes.unwrap_or(sweep.timing.processes),
        };
        if processes > 0 && strategy.is_some() {
            return Err(CmdError::BadInput(format!(
                "--processes {processes} with --strategy {}: a boundary search runs each unit once; drop one of them",
                opts.strategy.name()
            )));
        }
        let trials = trials_for(&opts, &sweep, old.as_ref(), strategy.is_some())?.max(processes);
        Ok(Setup {
            opts,
            sweep,
            sequence,
            backend,
            backends,
            rocm_env,
            dir,
            old,
            shard_record,
            shard,
            combos,
            product,
            strategy,
            trials,
            processes,
        })
    }

    pub fn resuming(&self) -> bool {
        self.old.is_some()
    }

    /// `--devices`, or the devices of the run being resumed; refused when the sweep sets the
    /// backend's visibility variable itself.
    pub fn device_sel(&self) -> Result<Option<DeviceSel>, CmdError> {
        let sel = self.opts.devices.clone().or_else(|| {
            self.old
                .as_ref()
                .filter(|m| !m.devices.is_empty())
                .map(|m| DeviceSel::List(m.devices.clone()))
        });
        let visibility = |k: &String| {
            devices::visibility_var("rocm") == Some(k) || devices::visibility_var("cuda") == Some(k)
        };
        if sel.is_some()
            && let Some((name, _)) = self
                .combos
                .iter()
                .flat_map(|c| &c.vars)
                .find(|(k, _)| visibility(k))
        {
            return Err(CmdError::BadInput(format!(
                "{}: the sweep sets {name} itself, which --devices sets per device; drop one of them",
                self.sweep.source.path
            )));
        }
        Ok(sel)
    }

    /// A resume reads and reconciles everything first: a run directory it cannot use is bad
    /// input, with nothing in it changed.
    pub fn read_resume(&self) -> Result<Option<Resume>, CmdError> {
        if !self.resuming() {
            return Ok(None);
        }
        // Inferred rows are recomputed from the measured ones (strategy_run.rs); skipped units
        // never ran; interrupted ones run again when asked to.
        let mut again = vec![Status::Skipped, Status::InferredOk, Status::InferredFail];
        if self.opts.retry_interrupted {
            again.push(Status::Interrupted);
        }
        let r = crate::exec::plan::resume::read(&self.dir, self.sweep.op, &again)
            .map_err(CmdError::BadInput)?;
        Ok(Some(r))
    }

    /// A finished resumed run with a row for every planned unit and nothing to repair: nothing
    /// is run, written or stamped.
    pub fn nothing_to_do(&self, r: &Resume) -> bool {
        self.old
            .as_ref()
            .is_some_and(|m| m.finished_at.is_some() && m.stopped.is_none())
            && r.retry.is_empty()
            && r.journal.unfinished.is_empty()
            && !r.rewrite
            && r.notes.is_empty()
            && every_unit_has_a_row(&self.sweep, &self.combos, self.shard, &r.ids())
    }

    pub fn policies(&self) -> Policies {
        Policies {
            limits: self.sweep.limits.clone(),
            timing: crate::spec::policy::TimingPolicy {
                trials: self.trials,
                processes: self.processes,
                ..self.sweep.timing.clone()
            },
            verify: self.sweep.verify.clone(),
        }
    }

    /// Beside a GPU backend, the torch layer must run on a GPU too: a torch without one is
    /// unavailable (its CPU numbers beside a GPU library's would pair two different devices).
    fn torch_needs_gpu(&self) -> Option<(String, String)> {
        let gpu: Vec<&str> = self
            .backends
            .iter()
            .map(String::as_str)
            .filter(|b| matches!(*b, "cuda" | "rocm"))
            .collect();
        (self.backends.iter().any(|b| b == "torch") && !gpu.is_empty()).then(|| {
            (
                crate::backend::torch::NEEDS_GPU_VAR.to_string(),
                gpu.join(","),
            )
        })
    }

    /// How this run starts its workers.
    pub fn worker_spec(&self) -> Result<WorkerSpec, CmdError> {
        let exe = match &self.opts.worker_exe {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .map_err(|e| CmdError::Failure(format!("cannot find this program's path: {e}")))?,
        };
        Ok(WorkerSpec {
            exe,
            backend: self.backend.clone(),
            extra_env: self
                .rocm_env
                .iter()
                .map(|p| (crate::rocm_tree::discover::ROCM_ENV.to_string(), p.clone()))
                .chain(self.torch_needs_gpu())
                .collect(),
            cache_root: (!self.opts.shared_caches).then(|| self.dir.join("caches")),
            cache_vars: crate::backend::registry::isolated_cache_vars(&self.backend)
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..WorkerSpec::default()
        })
    }

    /// The manifest of a new run, as its first worker described the backend.
    pub fn new_manifest(
        &self,
        info: &BackendInfo,
        counted: &units::PlanCount,
        planned: u64,
        devices: Vec<usize>,
    ) -> Manifest {
        let combos = &self.combos;
        Manifest {
            manifest_version: 1,
            rocsweep_version: build_info::VERSION.into(),
            git_commit: build_info::GIT_COMMIT.into(),
            command_line: self.opts.command_line.clone(),
            started_at: chrono::Utc::now().to_rfc3339(),
            finished_at: None,
            host: Host::current(),
            backend: info.clone(),
            sweep: SweepInfo::of(&self.sweep),
            policies: self.policies(),
            env_combos: combos.iter().map(EnvCombo::shown).collect(),
            environment: manifest::environment(
                &combos
                    .iter()
                    .flat_map(|c| c.vars.iter().map(|(k, _)| k.clone()))
                    .collect::<Vec<_>>(),
            ),
            units_planned: planned,
            counts: Default::default(),
            invalid_combinations: counted.invalid,
            invalid_example: counted.invalid_example.clone(),
            resumed: Vec::new(),
            stopped: None,
            shard: self.shard_record.clone(),
            devices,
            merge: None,
            env_devices: Default::default(),
            backends: Vec::new(),
            rocm_trees: Vec::new(),
        }
    }
}

struct Prepared {
    sweep: Sweep,
    sequence: Option<spec::sequence::Sequence>,
    backends: Vec<String>,
    dir: PathBuf,
    manifest: Option<Manifest>,
    shard: Option<ShardRecord>,
}

/// The sweep of a run whose sweep sets credentials: the run directory keeps them masked, so a
/// resume reads the sweep file itself, which must be the one the run started from (its
/// SHA-256), else the resume is refused (issue 40, S5).
fn original_sweep(dir: &Path, m: &Manifest) -> Result<spec::Sweep, CmdError> {
    let refuse = |why: String| {
        CmdError::BadInput(format!(
            "cannot resume {}: its sweep sets credentials (variables such as *_TOKEN), whose \
             values the run directory does not keep, so the resume reads the sweep file {}: \
             {why}; run the resume from the directory the run was started in, with that file \
             as it was",
            dir.display(),
            m.sweep.path
        ))
    };
    let sweep = spec::load(Path::new(&m.sweep.path), &m.sweep.overrides)
        .map_err(|e| refuse(e.message.clone()))?;
    if sweep.source.sha256 != m.sweep.sha256 {
        return Err(refuse(format!(
            "it has changed since the run started (SHA-256 {}, the run's {})",
            sweep.source.sha256.get(..12).unwrap_or(""),
            m.sweep.sha256.get(..12).unwrap_or("")
        )));
    }
    Ok(sweep)
}

fn load(opts: &RunOptions) -> Result<Prepared, CmdError> {
    if let Some(dir) = &opts.resume {
        let m = manifest::read(dir)
            .map_err(|e| CmdError::BadInput(format!("cannot resume {}: {e}", dir.display())))?;
        if m.merge.is_some() {
            return Err(CmdError::BadInput(format!(
                "cannot resume {}: it was merged from shards; resume the shard that is missing units, then merge again",
                dir.display()
            )));
        }
        let sweep = if m.sweep.masked {
            original_sweep(dir, &m)?
        } else {
            spec::load_str(&m.sweep.path, &m.sweep.text, &m.sweep.overrides).map_err(|e| {
                let stored = dir.join("manifest.json");
                e.in_file(&format!(
                    "{} (sweep.text, from {})",
                    stored.display(),
                    m.sweep.path
                ))
            })?
        };
        let backends = backends_of(&m);
        let shard = m.shard.clone();
        return Ok(Prepared {
            sweep,
            sequence: None,
            backends,
            dir: dir.clone(),
            manifest: Some(m),
            shard,
        });
    }
    let path = opts
        .sweep
        .as_ref()
        .ok_or_else(|| CmdError::BadInput("a sweep file or --resume RUN_DIR is required".into()))?;
    let (shown, text) = spec::read_file(path)?;
    let (sweep, sequence) = if spec::sequence::is_sequence(&text) {
        let seq = spec::sequence::load_str(&shown, &text, &opts.overrides())?;
        (seq.sweep.clone(), Some(seq))
    } else {
        (spec::load_str(&shown, &text, &opts.overrides())?, None)
    };
    let backends = match &opts.backend {
        Some(list) => crate::exec::plan::options::parse_backends(list)
            .map_err(|e| CmdError::BadInput(format!("--backend {list}: {e}")))?,
        None => sweep.backends.clone(),
    };
    let shard = match (opts.shard, opts.shard_from_env) {
        (Some(s), _) => Some(ShardRecord {
            index: s.index,
            count: s.count,
            from: "--shard".into(),
        }),
        (None, true) => Some(
            shard::from_env(|k| std::env::var(k).ok(), opts.shard_count)
                .map_err(CmdError::BadInput)?,
        ),
        (None, false) => None,
    };
    let dir = opts.out.clone().unwrap_or_else(|| {
        let d = rundir::default_path(&sweep.name, chrono::Utc::now());
        let d = match shard.as_ref().and_then(|s| s.shard().ok()) {
            Some(s) => PathBuf::from(format!("{}{}", d.display(), s.suffix())),
            None => d,
        };
        // Named by the clock to the second: a run started in the same second as another
        // (or beside a directory of that name) takes the next free `-2`, `-3`, ...
        rundir::fresh(&d)
    });
    Ok(Prepared {
        sweep,
        sequence,
        backends,
        dir,
        manifest: None,
        shard,
    })
}

/// The backends of a run being resumed: those its contexts name when it ran several side by
/// side, else the one its manifest records (what `auto` resolved to).
fn backends_of(m: &Manifest) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for b in m.env_combos.iter().filter_map(|c| c.backend.as_ref()) {
        if !out.contains(b) {
            out.push(b.clone());
        }
    }
    if out.is_empty() {
        out.push(m.backend.backend.clone());
    }
    out
}

/// The ROCm trees of the run, resolved: those of the run being resumed (several) or, for a new
/// run, `--rocm` given several times, else the sweep's `rocm` key (`--rocm` given once has been
/// exported by `main` and wins over the sweep). A path with no HIP runtime is bad input.
fn trees_of(
    opts: &RunOptions,
    sweep: &Sweep,
    old: Option<&Manifest>,
) -> Result<Vec<RocmTree>, CmdError> {
    if let Some(m) = old {
        let mut out: Vec<RocmTree> = Vec::new();
        for t in m.env_combos.iter().filter_map(|c| c.rocm.as_ref()) {
            if !out.contains(t) {
                out.push(t.clone());
            }
        }
        if !out.is_empty() {
            return Ok(out);
        }
    }
    let (labels, source) = match opts.rocm.len() {
        0 => (&sweep.rocm, sweep.source.path.as_str()),
        1 => return Ok(Vec::new()),
        _ => (&opts.rocm, "--rocm"),
    };
    // Each tree with its real path: a tree named twice would run every unit twice under one
    // label (issue 40, D4).
    let mut out: Vec<(RocmTree, PathBuf)> = Vec::new();
    for label in labels {
        let t = resolve_tree(label, source)?;
        let here = std::fs::canonicalize(&t.path).unwrap_or_else(|_| PathBuf::from(&t.path));
        if let Some((first, _)) = out.iter().find(|(o, r)| o.label == t.label || *r == here) {
            let how = if first.label == t.label {
                format!("`{label}` is named twice")
            } else {
                format!(
                    "`{}` and `{label}` are the same tree ({})",
                    first.label, t.path
                )
            };
            return Err(CmdError::BadInput(format!(
                "{source}: {how}; each ROCm tree may be named once"
            )));
        }
        out.push((t, here));
    }
    Ok(out.into_iter().map(|(t, _)| t).collect())
}

/// One tree as the sweep or `--rocm` names it: `~/` is the home directory, then it is found as
/// `--rocm` finds a tree (`rocm_tree::discover::resolve_flag`).
fn resolve_tree(label: &str, source: &str) -> Result<RocmTree, CmdError> {
    let path = match (label.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(label),
    };
    let path = crate::rocm_tree::discover::resolve_flag(&path)
        .map_err(|why| CmdError::BadInput(format!("{source}: rocm `{label}`: {why}")))?;
    Ok(RocmTree {
        label: label.to_string(),
        path: path.display().to_string(),
    })
}

/// Whether every unit of the plan (this shard's) has its row. A `solver = "all"` case is not
/// known to be complete until its solvers are listed again: such a plan never reads as done.
fn every_unit_has_a_row(
    sweep: &Sweep,
    combos: &[crate::spec::expand::EnvCombo],
    shard: Option<Shard>,
    ids: &HashSet<String>,
) -> bool {
    units::cases(sweep, combos)
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|s| s.contains(*i as u64)))
        .all(|(_, (_, env_key, case))| {
            case.solver != "all"
                && ids.contains(&crate::op::unit_id(&case.id, &case.solver, &env_key))
        })
}

/// Trials per unit: a resume keeps the run's; else `--trials`, else the sweep's `[timing]
/// trials`. A boundary search (prune, bisect) decides from statuses and runs each unit once;
/// so does a sweep with timing off (trials exist to measure run-to-run noise).
fn trials_for(
    opts: &RunOptions,
    sweep: &Sweep,
    old: Option<&Manifest>,
    strategy: bool,
) -> Result<u32, CmdError> {
    if let Some(m) = old {
        return Ok(m.policies.timing.trials.max(1));
    }
    if let Some(n) = opts.trials {
        if !(1..=crate::spec::policy::MAX_TRIALS).contains(&n) {
            return Err(CmdError::BadInput(format!(
                "--trials {n}: must be 1 to {}",
                crate::spec::policy::MAX_TRIALS
            )));
        }
        if strategy && n > 1 {
            return Err(CmdError::BadInput(format!(
                "--trials {n} with --strategy {}: a boundary search runs each unit once (it decides from statuses); \
                 drop --trials or run the grid",
                opts.strategy.name()
            )));
        }
        return Ok(n);
    }
    Ok(if strategy || !sweep.timing.enabled {
        1
    } else {
        sweep.timing.trials
    })
}

/// Holds the run directory's lock for the life of the run (released when the process ends,
/// however it ends).
pub fn lock(dir: &Path) -> Result<File, CmdError> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join("run.lock");
    // O_NONBLOCK: a FIFO put in its place must not block the open (it fails, or is refused
    // below as not a regular file).
    // O_NOFOLLOW: a symbolic link planted at its name is refused (ELOOP).
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(&path)
        .and_then(|f| {
            if f.metadata()?.is_file() {
                Ok(f)
            } else {
                Err(std::io::Error::other("not a regular file"))
            }
        })
        .map_err(|e| CmdError::Failure(format!("{}: {e}", path.display())))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(CmdError::BadInput(format!(
            "{} is in use by another rocsweep run (run.lock is held)",
            dir.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(CmdError::Failure(format!("{}: {e}", path.display())))
        }
    }
}

/// The run options that plan a grid and mean nothing to a sequence (issue 43): each refused
/// with the option named, before anything is written.
fn refuse_for_sequence(opts: &RunOptions, seq: &spec::sequence::Sequence) -> Result<(), CmdError> {
    let given = [
        (
            opts.strategy != crate::exec::plan::strategy::Kind::Grid,
            "--strategy",
        ),
        (opts.along.is_some(), "--along"),
        (opts.confirm > 0, "--confirm"),
        (opts.shard.is_some() || opts.shard_from_env, "--shard"),
        (opts.devices.is_some(), "--devices"),
    ];
    match given.iter().find(|(on, _)| *on) {
        Some((_, flag)) => Err(CmdError::BadInput(format!(
            "{}: {flag} does not apply to a sequence (its steps run in order in one process per env combination)",
            seq.sweep.source.path
        ))),
        None => Ok(()),
    }
}

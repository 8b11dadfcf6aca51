//! `rocsweep tune RUN_DIR --out DIR`: from a run that timed the library's `default` beside its
//! named solutions (`solver = ["default", "all"]`), the files a library or framework loads to
//! take the best solution, written only for the shapes where the best beats the default beyond
//! noise (`analyze::default_best`), each with its evidence (tune.md, tune.csv):
//! - [`hipblaslt`], `HIPBLASLT_TUNING_OVERRIDE_FILE`;
//! - [`rocblas`], `ROCBLAS_TENSILE_GEMM_OVERRIDE_PATH`;
//! - [`tunableop`], PyTorch TunableOp's results file, validators from the target Python.
//!
//! With `--verify` each library file is proven in fresh processes ([`verify`]) and a row that
//! does not hold is dropped. For a convolution run, [`miopen`]: no db line of rocsweep's (their
//! formats and names are bound to MIOpen's version), but the find-db MIOpen itself wrote in the
//! sandbox of the combination `recommend` ranks first.

pub mod evidence;
pub mod hipblaslt;
pub mod miopen;
pub mod model;
pub mod rocblas;
pub mod shape;
pub mod tunableop;
pub mod verify;

use crate::analyze::default_best;
use crate::error::CmdError;
use crate::results::rundata::RunData;
pub use model::{Tuned, chosen_text, target_of};
use shape::Blas;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use tunableop::Lib;
use verify::Check;

pub struct Options {
    pub run_dir: PathBuf,
    pub out: PathBuf,
    pub verify: bool,
}

pub fn command(o: &Options) -> Result<i32, CmdError> {
    let run = RunData::load(&o.run_dir)?;
    match run.manifest.sweep.op.as_str() {
        "gemm" => {}
        "conv2d" => return find_db(&run, o),
        other => {
            return Err(CmdError::BadInput(format!(
                "{}: a {other} run; tune writes GEMM solution files (hipBLASLt, rocBLAS, PyTorch TunableOp) and, for convolutions, MIOpen's own find-db",
                o.run_dir.display(),
            )));
        }
    }
    let pairs = default_best::pairs(&run.rows);
    if pairs.is_empty() {
        return Err(CmdError::BadInput(format!(
            "{}: no GEMM with both `default` and named solutions timed ok, so there is no best to hand the library; run the sweep with solver = [\"default\", \"all\"] and --trials 3",
            o.run_dir.display()
        )));
    }
    let mut tuned: Vec<Tuned> = Vec::new();
    for p in pairs.iter().filter(|p| p.beats_default()) {
        let gemm = shape::gemm_of(p.default).map_err(CmdError::BadInput)?;
        tuned.push(Tuned {
            pair: p.clone(),
            blas: Blas::of(&gemm),
            gemm,
            target: target_of(&p.best.solver),
            files: BTreeMap::new(),
            checks: BTreeMap::new(),
        });
    }
    // The target PyTorch is asked once (a Python start), whichever files are written again.
    let torch = tuned
        .iter()
        .any(|t| t.target.is_some())
        .then(|| tunableop::read(&crate::backend::torch::choose_python().0));
    let torch = torch.as_ref();
    let files = write_files(&run, &mut tuned, &o.out, torch)?;
    if !tuned.is_empty() && files.is_empty() {
        return Err(CmdError::BadInput(refusal(&tuned)));
    }
    if o.verify {
        for f in &files {
            verify_file(&run, &mut tuned, f, &o.out)?;
        }
        // The files again, with only the rows that held.
        write_files(&run, &mut tuned, &o.out, torch)?;
    }
    let md = evidence::write(&run, &pairs, &tuned, &o.out, o.verify)?;
    crate::sayln!("{}", evidence::headline(&pairs, &tuned, o.verify));
    crate::sayln!("written: {}", md.display());
    Ok(crate::exit::OK)
}

/// A convolution run: MIOpen's own find-db of the combination `recommend` ranks first
/// ([`miopen`]), with tune.md saying where it came from.
fn find_db(run: &RunData, o: &Options) -> Result<i32, CmdError> {
    if o.verify {
        return Err(CmdError::BadInput(format!(
            "{}: --verify proves GEMM solution files; MIOpen's find-db is MIOpen's own record of its Find and is handed over as it is (run tune without --verify)",
            o.run_dir.display()
        )));
    }
    let db = miopen::write(run, &o.out).map_err(|why| {
        CmdError::BadInput(format!(
            "{}: a conv2d run; {why}. For MIOpen's variables alone, `rocsweep recommend` writes the env-var profile",
            o.run_dir.display()
        ))
    })?;
    let md = o.out.join("tune.md");
    crate::results::atomic::write(&md, miopen::markdown(run, &db))
        .map_err(|e| CmdError::Failure(format!("{}: {e}", md.display())))?;
    crate::sayln!("{}", miopen::headline(&db));
    crate::sayln!("written: {}", md.display());
    Ok(crate::exit::OK)
}

/// Why no file could be written for any tuned shape.
fn refusal(tuned: &[Tuned]) -> String {
    let mut why: Vec<String> = tuned
        .iter()
        .flat_map(|t| {
            let solver = format!("solver {}", t.pair.best.solver);
            t.files
                .values()
                .filter_map(|r| r.as_ref().err().cloned())
                .chain(
                    t.target
                        .is_none()
                        .then(|| unnamed(&solver, t.pair.best.backend.as_str())),
                )
                .collect::<Vec<_>>()
        })
        .collect();
    why.sort();
    why.dedup();
    format!(
        "{} shapes have a best solution beyond noise, but no file can hand it to the library: {}",
        tuned.len(),
        why.join("; ")
    )
}

/// Why no file can hand the library `solver` (a solver of `backend`).
fn unnamed(solver: &str, backend: &str) -> String {
    if backend == "cuda" {
        format!(
            "{solver}: cuBLASLt and cuDNN read no override file; PyTorch TunableOp on CUDA knows only its `Default` solution up to 2.11, and names cuBLASLt's algorithms by their configuration in later releases (2.15), rows rocsweep does not write"
        )
    } else {
        format!(
            "{solver}: no file a library or framework reads can name it (only hipBLASLt's and rocBLAS's named solutions can be)"
        )
    }
}

/// The library files a tuning writes and how each is verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileKind {
    pub name: &'static str,
    pub lib: Lib,
    pub var: &'static str,
}

const LIBRARY_FILES: [FileKind; 2] = [
    FileKind {
        name: hipblaslt::FILE,
        lib: Lib::Hipblaslt,
        var: hipblaslt::VAR,
    },
    FileKind {
        name: rocblas::FILE,
        lib: Lib::Rocblas,
        var: rocblas::VAR,
    },
];

/// Writes every file that has rows (a shape a verification dropped is left out) and returns the
/// library files written; records per shape which file took it or why not.
fn write_files(
    run: &RunData,
    tuned: &mut [Tuned],
    out: &Path,
    torch: Option<&Result<tunableop::Torch, String>>,
) -> Result<Vec<FileKind>, CmdError> {
    let versions = &run.manifest.backend_info("rocm").versions;
    let mut written = Vec::new();
    for kind in LIBRARY_FILES {
        let text = match kind.lib {
            Lib::Hipblaslt => hipblaslt::build(versions, tuned),
            Lib::Rocblas => rocblas::build(versions, tuned),
        };
        if let Some(text) = text {
            write(out, kind.name, &text)?;
            written.push(kind);
        } else {
            remove_stale(out, kind.name)?;
        }
    }
    let git = versions.get(crate::backend::rocm::HIPBLASLT_GIT).cloned();
    if let Some(torch) = torch {
        match torch
            .as_ref()
            .map(|torch| tunableop_rows(torch, tuned, git.as_deref()))
        {
            Ok(Some(text)) => write(out, tunableop::FILE, &text)?,
            Ok(None) => remove_stale(out, tunableop::FILE)?,
            Err(why) => {
                for t in tuned.iter_mut().filter(|t| t.target.is_some()) {
                    t.files.insert(tunableop::FILE, Err(why.clone()));
                }
                remove_stale(out, tunableop::FILE)?;
            }
        }
    }
    Ok(written)
}

/// The TunableOp file's text for the tuned shapes it can name (None: none).
fn tunableop_rows(
    torch: &tunableop::Torch,
    tuned: &mut [Tuned],
    git: Option<&str>,
) -> Option<String> {
    let mut rows = Vec::new();
    for t in tuned.iter_mut() {
        let Some((lib, index)) = t.target else {
            continue;
        };
        let dropped = t.checks.values().any(|c| matches!(c, Check::Dropped(_)));
        let r = match torch.refuses(lib, git) {
            Some(why) => Err(why),
            None if dropped => Err("its library file's verification dropped it".into()),
            None => {
                let types = (t.gemm.dtype, t.gemm.out_dtype, t.gemm.compute);
                let ms = t.pair.best.median_ms.unwrap_or(0.0);
                torch
                    .row(&t.blas, types, lib, index, ms)
                    .map(|row| rows.push(row))
            }
        };
        t.files.insert(tunableop::FILE, r);
    }
    (!rows.is_empty()).then(|| torch.text(&rows))
}

fn write(out: &Path, name: &str, text: &str) -> Result<(), CmdError> {
    std::fs::create_dir_all(out)
        .map_err(|e| CmdError::Failure(format!("{}: {e}", out.display())))?;
    let p = out.join(name);
    crate::results::atomic::write(&p, text)
        .map_err(|e| CmdError::Failure(format!("{}: {e}", p.display())))
}

/// A file an earlier tuning wrote into `out` that this one has no rows for.
fn remove_stale(out: &Path, name: &str) -> Result<(), CmdError> {
    let p = out.join(name);
    match std::fs::remove_file(&p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CmdError::Failure(format!("{}: {e}", p.display()))),
    }
}

/// Verifies one library file: its shapes, per env combination, in fresh processes.
fn verify_file(
    run: &RunData,
    tuned: &mut [Tuned],
    kind: &FileKind,
    out: &Path,
) -> Result<(), CmdError> {
    let file = std::path::absolute(out.join(kind.name))
        .map_err(|e| CmdError::Failure(format!("{}: {e}", out.display())))?;
    let in_file = |t: &Tuned| matches!(t.files.get(kind.name), Some(Ok(())));
    let mut envs: Vec<String> = tuned
        .iter()
        .filter(|t| in_file(t))
        .map(|t| t.pair.default.env.to_string())
        .collect();
    envs.sort();
    envs.dedup();
    let lib = match kind.lib {
        Lib::Hipblaslt => "hipblaslt",
        Lib::Rocblas => "rocblas",
    };
    let proof = match kind.lib {
        Lib::Hipblaslt => verify::Proof::Chosen,
        // rocBLAS does not say which solution its own pick ran; Tensile logs an override it
        // applies, so each shape runs alone.
        Lib::Rocblas => verify::Proof::Log {
            var: "TENSILE_DB",
            value: "0x40000",
            line: "Override found for problem",
        },
    };
    let mut groups: Vec<Vec<verify::Want>> = Vec::new();
    for env in &envs {
        let wants = tuned
            .iter()
            .filter(|t| in_file(t) && t.pair.default.env.as_str() == env)
            .filter_map(|t| {
                let (l, index) = t.target?;
                Some(verify::Want {
                    default: t.pair.default,
                    chosen: matches!(proof, verify::Proof::Chosen).then(|| chosen_text(l, index)),
                })
            });
        match proof {
            verify::Proof::Chosen => groups.push(wants.collect()),
            verify::Proof::Log { .. } => groups.extend(wants.map(|w| vec![w])),
        }
    }
    let mut found: HashMap<(String, String), Check> = HashMap::new();
    for (i, wants) in groups.iter().enumerate() {
        let label = if groups.len() > 1 {
            format!("{lib}-{}", i + 1)
        } else {
            lib.to_string()
        };
        let Some(env) = wants.first().map(|w| w.default.env.to_string()) else {
            continue;
        };
        let dir = verify::dir(out, &label)?;
        for (case, check) in verify::run(run, wants, (kind.var, &file), (&label, proof), &dir)? {
            found.insert((env.clone(), case), check);
        }
    }
    for t in tuned.iter_mut().filter(|t| in_file(t)) {
        let key = (
            t.pair.default.env.to_string(),
            t.pair.default.case_id.to_string(),
        );
        let check = found
            .remove(&key)
            .unwrap_or_else(|| Check::Dropped("not verified".into()));
        t.checks.insert(kind.name, check);
    }
    Ok(())
}

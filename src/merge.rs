//! `rocsweep merge DIR... --out DIR`: joins the run directories of one sweep's shards
//! (`run --shard I/N`) into one run directory, as if the sweep had run in one piece: results.csv
//! with every row (in the unsharded run's order), and a manifest that says which shards it was
//! merged from. Reads only the run directories, so it runs anywhere.
//!
//! It refuses (exit code 2, nothing written) shards of different sweeps (SHA-256 of the sweep
//! text, `--axis` overrides), of different splits (N), of different rocsweep builds (version and
//! git commit) or backends, directories that are not shards, and duplicated units (the same unit
//! id in two directories, e.g. a shard given twice). Missing work (a shard I of N with no
//! directory, a shard that did not finish, planned units with no row in any shard) is reported
//! with exit code 6 and nothing written, unless `--allow-missing`: then the merge is written,
//! and its manifest lists what is missing.

use crate::error::CmdError;
use crate::exec::plan;
use crate::exec::shard::Shard;
use crate::exit;
use crate::op::{OpKind, unit_id};
use crate::results::csv::{self as rcsv, ResultsWriter};
use crate::results::manifest::{self, Manifest, MergeInfo, MergedShard};
use crate::results::rundir;
use crate::spec;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

pub struct MergeOptions<'a> {
    pub dirs: &'a [PathBuf],
    pub out: &'a Path,
    pub allow_missing: bool,
    pub no_report: bool,
    pub quiet: bool,
    pub command_line: Vec<String>,
}

/// Missing units listed in messages and the manifest.
const EXAMPLES: usize = 20;

struct Input {
    dir: PathBuf,
    manifest: Manifest,
    shard: Shard,
    /// Rows in the current results.csv layout.
    rows: Vec<Vec<String>>,
}

/// A plan entry: a concrete unit, or a `solver = "all"` case whose solvers are known only from
/// its rows.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Unit(String),
    Case { case_id: String, env: String },
}

/// Runs `merge` and draws the report; returns the exit code.
pub fn command(o: &MergeOptions) -> Result<i32, CmdError> {
    let (code, dir) = merge(o)?;
    if let Some(dir) = dir
        && !o.no_report
    {
        crate::report::write_after(&dir, "merge", o.quiet);
    }
    Ok(code)
}

fn show(p: &Path) -> String {
    p.display().to_string()
}

fn load(dir: &Path) -> Result<Input, CmdError> {
    if !dir.is_dir() {
        return Err(CmdError::BadInput(format!(
            "{}: not a run directory (no such directory)",
            show(dir)
        )));
    }
    let manifest = manifest::read(dir).map_err(CmdError::BadInput)?;
    if manifest.merge.is_some() {
        return Err(CmdError::BadInput(format!(
            "{}: this is itself a merge of shards; merge the shard directories instead",
            show(dir)
        )));
    }
    let Some(rec) = &manifest.shard else {
        return Err(CmdError::BadInput(format!(
            "{}: not a shard (it was run without --shard or --shard-from-env); merge joins the shards of one sweep",
            show(dir)
        )));
    };
    let shard = rec
        .shard()
        .map_err(|e| CmdError::BadInput(format!("{}: manifest.json: shard: {e}", show(dir))))?;
    let op = OpKind::parse(&manifest.sweep.op).ok_or_else(|| {
        CmdError::BadInput(format!(
            "{}: manifest.json: unknown op `{}`",
            show(dir),
            manifest.sweep.op
        ))
    })?;
    let path = dir.join("results.csv");
    let (header, raw) = rcsv::read(&path).map_err(CmdError::BadInput)?;
    if let Some(missing) = rcsv::header(op)
        .into_iter()
        .find(|c| !header.contains(c) && !rcsv::OPTIONAL_COLUMNS.contains(&c.as_str()))
    {
        return Err(CmdError::BadInput(format!(
            "{}: no column `{missing}` (not a rocsweep results.csv for {}, or another version)",
            show(&path),
            op.name()
        )));
    }
    let mut rows = Vec::with_capacity(raw.len());
    for (i, r) in raw.iter().enumerate() {
        let row = rcsv::upgrade_row(op, &header, r).ok_or_else(|| {
            CmdError::BadInput(format!("{}: line {}: cannot be read", show(&path), i + 2))
        })?;
        rows.push(row);
    }
    Ok(Input {
        dir: dir.to_path_buf(),
        manifest,
        shard,
        rows,
    })
}

/// What differs between two shards that must not differ, one line each.
fn differences(a: &Input, b: &Input) -> Vec<String> {
    let (ma, mb) = (&a.manifest, &b.manifest);
    let mut d = Vec::new();
    if ma.sweep.sha256 != mb.sweep.sha256 {
        d.push(format!(
            "a different sweep: its sweep text has SHA-256 {} ({}), {} has {} ({})",
            short(&mb.sweep.sha256),
            mb.sweep.path,
            show(&a.dir),
            short(&ma.sweep.sha256),
            ma.sweep.path
        ));
    }
    if ma.sweep.overrides != mb.sweep.overrides {
        d.push(format!(
            "different --axis overrides: [{}], {} has [{}]",
            mb.sweep.overrides.join(" "),
            show(&a.dir),
            ma.sweep.overrides.join(" ")
        ));
    }
    if ma.rocsweep_version != mb.rocsweep_version || ma.git_commit != mb.git_commit {
        d.push(format!(
            "a different rocsweep version: {} (commit {}), {} was made by {} (commit {})",
            mb.rocsweep_version,
            mb.git_commit,
            show(&a.dir),
            ma.rocsweep_version,
            ma.git_commit
        ));
    }
    if ma.backend.backend != mb.backend.backend {
        d.push(format!(
            "a different backend: {}, {} ran on {}",
            mb.backend.backend,
            show(&a.dir),
            ma.backend.backend
        ));
    }
    if a.shard.count != b.shard.count {
        d.push(format!(
            "a different split: it is shard {}, {} is shard {}",
            b.shard,
            show(&a.dir),
            a.shard
        ));
    }
    d
}

fn short(sha: &str) -> String {
    sha.chars().take(12).collect()
}

/// Checks, then writes the merged run directory (staged, then renamed into place). Returns the
/// exit code and the directory when one was written.
pub fn merge(o: &MergeOptions) -> Result<(i32, Option<PathBuf>), CmdError> {
    rundir::check_free(o.out).map_err(|e| CmdError::BadInput(e.to_string()))?;
    let mut inputs = Vec::with_capacity(o.dirs.len());
    for d in o.dirs {
        inputs.push(load(d)?);
    }
    let Some(first) = inputs.first() else {
        return Err(CmdError::BadInput(
            "merge needs the shard run directories".into(),
        ));
    };

    let mut problems = Vec::new();
    for b in &inputs[1..] {
        for d in differences(first, b) {
            problems.push(format!(
                "{} cannot be merged with {}: {d}",
                show(&b.dir),
                show(&first.dir)
            ));
        }
    }
    if !problems.is_empty() {
        return Err(CmdError::BadInput(problems.join("\n")));
    }

    // Duplicates: a shard given twice, or a unit in two directories.
    let mut by_shard: BTreeMap<u32, Vec<&Input>> = BTreeMap::new();
    for i in &inputs {
        by_shard.entry(i.shard.index).or_default().push(i);
    }
    for (idx, v) in &by_shard {
        if v.len() > 1 {
            let dirs: Vec<String> = v.iter().map(|i| show(&i.dir)).collect();
            problems.push(format!(
                "shard {idx}/{} is given {} times: {}",
                first.shard.count,
                v.len(),
                dirs.join(", ")
            ));
        }
    }
    let id_col = rcsv::FIXED_COLUMNS
        .iter()
        .position(|c| *c == "unit_id")
        .unwrap_or(0);
    let mut owner: HashMap<&str, usize> = HashMap::new();
    let mut dups: Vec<(String, usize, usize)> = Vec::new();
    for (n, i) in inputs.iter().enumerate() {
        for r in &i.rows {
            let id = r.get(id_col).map(String::as_str).unwrap_or("");
            if let Some(&m) = owner.get(id) {
                dups.push((id.to_string(), m, n));
            } else {
                owner.insert(id, n);
            }
        }
    }
    if !dups.is_empty() {
        let mut text = format!(
            "{} duplicated unit(s): the same unit id in more than one place:",
            dups.len()
        );
        for (id, a, b) in dups.iter().take(5) {
            let (a, b) = (show(&inputs[*a].dir), show(&inputs[*b].dir));
            if a == b {
                text.push_str(&format!(
                    "\n  unit {id} is twice in {a} (the same directory given twice?)"
                ));
            } else {
                text.push_str(&format!("\n  unit {id} is in {a} and in {b}"));
            }
        }
        if dups.len() > 5 {
            text.push_str(&format!("\n  ... and {} more", dups.len() - 5));
        }
        problems.push(text);
    }
    if !problems.is_empty() {
        return Err(CmdError::BadInput(format!(
            "cannot merge: {}",
            problems.join("\n")
        )));
    }

    // The full plan, from the sweep text the shards ran (every shard has the same).
    let ms = &first.manifest.sweep;
    let sweep = spec::load_str(&ms.path, &ms.text, &ms.overrides).map_err(|e| {
        let stored = first.dir.join("manifest.json");
        e.in_file(&format!("{} (sweep.text, from {})", show(&stored), ms.path))
    })?;
    let op = sweep.op;
    let combos = sweep.env_combos();
    let mut order: HashMap<Key, usize> = HashMap::new();
    let mut entries: Vec<(Key, String)> = Vec::new();
    for (pos, (_, env_key, case)) in plan::cases(&sweep, &combos).enumerate() {
        let key = if case.solver == "all" {
            Key::Case {
                case_id: case.id.clone(),
                env: env_key.clone(),
            }
        } else {
            Key::Unit(unit_id(&case.id, &case.solver, &env_key))
        };
        let env = if env_key.is_empty() {
            String::new()
        } else {
            format!(" [{env_key}]")
        };
        let text = format!(
            "{} {} solver={}{env}",
            case.id,
            crate::op::canonical_text(op, &case.values),
            case.solver
        );
        order.entry(key.clone()).or_insert(pos);
        entries.push((key, text));
    }
    let col = |name: &str| rcsv::FIXED_COLUMNS.iter().position(|c| *c == name);
    let (case_col, env_col, status_col) = (col("case_id"), col("env"), col("status"));
    let cell = |r: &[String], c: Option<usize>| -> String {
        c.and_then(|c| r.get(c)).cloned().unwrap_or_default()
    };
    let mut have: HashSet<Key> = HashSet::new();
    let mut merged: Vec<(usize, usize, usize, Vec<String>)> = Vec::new();
    // Shards in index order, so rows the plan does not place keep a stable order.
    let mut sorted: Vec<&Input> = inputs.iter().collect();
    sorted.sort_by_key(|i| i.shard.index);
    for (n, input) in sorted.iter().enumerate() {
        for (k, r) in input.rows.iter().enumerate() {
            let unit = Key::Unit(cell(r, Some(id_col)));
            let case = Key::Case {
                case_id: cell(r, case_col),
                env: cell(r, env_col),
            };
            let pos = order
                .get(&unit)
                .or_else(|| order.get(&case))
                .copied()
                .unwrap_or(usize::MAX);
            have.insert(unit);
            have.insert(case);
            merged.push((pos, n, k, r.clone()));
        }
    }
    merged.sort_by_key(|(pos, n, k, _)| (*pos, *n, *k));

    let count = first.shard.count;
    let missing_shards: Vec<String> = (1..=count)
        .filter(|i| !by_shard.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    let unfinished: Vec<String> = sorted
        .iter()
        .filter(|i| {
            i.manifest.finished_at.is_none()
                || i.manifest
                    .stopped
                    .as_deref()
                    .is_some_and(|s| s.starts_with("interrupted"))
        })
        .map(|i| {
            format!(
                "shard {} ({}) did not finish ({}); resume it with `rocsweep run --resume {}`, then merge again",
                i.shard,
                show(&i.dir),
                i.manifest
                    .stopped
                    .as_deref()
                    .unwrap_or("no finish time: still running, or killed"),
                show(&i.dir)
            )
        })
        .collect();
    let missing: Vec<&String> = entries
        .iter()
        .filter(|(k, _)| !have.contains(k))
        .map(|(_, t)| t)
        .collect();
    let complete = missing_shards.is_empty() && unfinished.is_empty() && missing.is_empty();
    let mut report = Vec::new();
    for s in &missing_shards {
        report.push(format!("shard {s} is missing"));
    }
    report.extend(unfinished.iter().cloned());
    if !missing.is_empty() {
        let mut t = format!(
            "{} of {} planned units have no row in any shard, e.g.:",
            missing.len(),
            entries.len()
        );
        for m in missing.iter().take(5) {
            t.push_str(&format!("\n    {m}"));
        }
        report.push(t);
    }
    if !complete && !o.allow_missing {
        eprintln!(
            "error: the shards do not cover the sweep `{}`:\n  {}\nnothing was written; run or resume what is missing and merge again, or pass --allow-missing to merge what there is",
            sweep.name,
            report.join("\n  ")
        );
        return Ok((exit::MERGE_INCOMPLETE, None));
    }

    // The merged manifest: the lowest shard's, with what differs per shard kept in `merge`.
    let mut man = sorted[0].manifest.clone();
    man.command_line = o.command_line.clone();
    man.started_at = sorted
        .iter()
        .map(|i| i.manifest.started_at.clone())
        .min()
        .unwrap_or_default();
    man.finished_at = sorted
        .iter()
        .filter_map(|i| i.manifest.finished_at.clone())
        .max();
    let mut devices: Vec<String> = Vec::new();
    for i in &sorted {
        for d in &i.manifest.backend.devices {
            if !devices.contains(d) {
                devices.push(d.clone());
            }
        }
    }
    man.backend.devices = devices;
    man.env_devices = sorted
        .iter()
        .flat_map(|i| i.manifest.env_devices.clone())
        .collect();
    man.units_planned = entries.len() as u64;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for (_, _, _, r) in &merged {
        *counts.entry(cell(r, status_col)).or_default() += 1;
    }
    man.counts = counts;
    man.resumed = Vec::new();
    man.stopped = None;
    man.shard = None;
    man.devices = Vec::new();
    man.merge = Some(MergeInfo {
        merged_at: chrono::Utc::now().to_rfc3339(),
        shard_count: count,
        shards: sorted
            .iter()
            .map(|i| MergedShard {
                dir: show(&i.dir),
                shard: i.shard.to_string(),
                hostname: i.manifest.host.hostname.clone(),
                started_at: i.manifest.started_at.clone(),
                finished_at: i.manifest.finished_at.clone(),
                resumed: i.manifest.resumed.clone(),
                stopped: i.manifest.stopped.clone(),
                devices: i.manifest.backend.devices.clone(),
                rows: i.rows.len() as u64,
            })
            .collect(),
        missing_shards: missing_shards.clone(),
        missing_units: missing.len() as u64,
        missing_examples: missing
            .iter()
            .take(EXAMPLES)
            .map(|s| s.to_string())
            .collect(),
    });

    let mut staging = rundir::Staging::create(o.out)?;
    write(&staging.path, op, &merged, &man)
        .and_then(|()| staging.publish())
        .map_err(|e| CmdError::Failure(format!("{}: {e}", show(o.out))))?;
    if !o.quiet {
        let counts: Vec<String> = man.counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
        println!(
            "merged {} shard(s) of `{}` into {}: {} units ({})",
            sorted.len(),
            sweep.name,
            show(o.out),
            merged.len(),
            counts.join(", ")
        );
    }
    if !complete {
        eprintln!(
            "warning: merged with --allow-missing; missing (also in manifest.json):\n  {}",
            report.join("\n  ")
        );
    }
    Ok((exit::OK, Some(o.out.to_path_buf())))
}

fn write(
    dir: &Path,
    op: OpKind,
    rows: &[(usize, usize, usize, Vec<String>)],
    man: &Manifest,
) -> std::io::Result<()> {
    let mut csv = ResultsWriter::create(&dir.join("results.csv"), op)?;
    for (_, _, _, r) in rows {
        csv.append(r)?;
    }
    csv.sync()?;
    manifest::write(dir, man)
}

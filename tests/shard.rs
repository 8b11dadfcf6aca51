//! Shards, merge and device pools through the real binary with real worker processes (CPU
//! backend). The target figure: merged shards give the same set of results (same unit ids, same
//! statuses) as an unsharded run of the same sweep.

#[path = "common/copy_dir.rs"]
mod copy_dir;
use copy_dir::copy_dir;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary with none of the variables that would change what it does.
fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocsweep"));
    for v in [
        "ROCSWEEP_TEST_FAULT",
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_MAX",
        "SLURM_ARRAY_TASK_STEP",
        "SLURM_ARRAY_TASK_COUNT",
        "JOB_COMPLETION_INDEX",
        "HIP_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
    ] {
        c.env_remove(v);
    }
    // The CPU backend has one device; the pool tests ask it to say it has two (test-only).
    c.env("ROCSWEEP_TEST_CPU_DEVICES", "2");
    c
}

fn run(args: &[&str], dirs: &[&Path], env: &[(&str, &str)]) -> Output {
    let mut c = bin();
    c.args(args);
    for d in dirs {
        c.arg(d);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Copies over sizes, directions and an env axis, with `solver = "all"` (expanded by the worker)
/// and one unit that really segfaults (through the test-only fault switch): 20 units.
const SWEEP: &str = r#"
name = "shard-test"
op = "copy"
backend = "cpu"

[axes]
direction = ["h2d", "d2h"]
bytes = [64, 128, 256, 512, 1024]
solver = "all"

[env_axes]
SHARD_TEST_VAR = ["a", "b"]

[timing]
enabled = false

[limits]
run = 10
grace = 0.5
"#;

const FAULT: &str = "bytes=256&direction=d2h&env.SHARD_TEST_VAR=b:segv@run";

fn write_sweep(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

struct Csv {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Csv {
    fn read(dir: &Path) -> Csv {
        let (header, rows) = rocsweep::results::csv::read(&dir.join("results.csv")).unwrap();
        Csv { header, rows }
    }
    fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    }
    fn ids(&self) -> Vec<String> {
        let c = self.col("unit_id");
        self.rows.iter().map(|r| r[c].clone()).collect()
    }
    /// unit id -> status
    fn statuses(&self) -> BTreeMap<String, String> {
        let (i, s) = (self.col("unit_id"), self.col("status"));
        let m: BTreeMap<String, String> = self
            .rows
            .iter()
            .map(|r| (r[i].clone(), r[s].clone()))
            .collect();
        assert_eq!(m.len(), self.rows.len(), "unit ids are unique");
        m
    }
    fn values(&self, name: &str) -> BTreeSet<String> {
        let c = self.col(name);
        self.rows.iter().map(|r| r[c].clone()).collect()
    }
}

fn run_sweep(sweep: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["run", sweep.to_str().unwrap(), "--quiet", "--no-report"];
    args.extend_from_slice(extra);
    args.push("--out");
    run(&args, &[out], &[("ROCSWEEP_TEST_FAULT", FAULT)])
}

fn merge(dirs: &[&Path], out: &Path, extra: &[&str]) -> Output {
    let mut c = bin();
    c.arg("merge").args(dirs).arg("--out").arg(out).args(extra);
    c.output().unwrap()
}

/// An unsharded run and shards 1..3 of 3 (shard 2 on two device pools) of the same sweep.
struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    sweep: PathBuf,
    full: PathBuf,
    shards: Vec<PathBuf>,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let sweep = write_sweep(&root, "sweep.toml", SWEEP);
    let full = root.join("full");
    let o = run_sweep(&sweep, &full, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut shards = Vec::new();
    for i in 1..=3 {
        let out = root.join(format!("shard{i}"));
        let shard = format!("{i}/3");
        let mut extra = vec!["--shard", shard.as_str()];
        if i == 2 {
            extra.extend_from_slice(&["--devices", "0,1"]);
        }
        let o = run_sweep(&sweep, &out, &extra);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        shards.push(out);
    }
    Fixture {
        _tmp: tmp,
        root,
        sweep,
        full,
        shards,
    }
}

#[test]
fn merged_shards_give_the_same_unit_ids_and_statuses_as_an_unsharded_run() {
    let f = fixture();
    let full = Csv::read(&f.full);
    assert_eq!(full.rows.len(), 20);
    let statuses = full.statuses();
    assert_eq!(
        statuses.values().filter(|s| *s == "crash").count(),
        1,
        "the injected segfault is data: {statuses:?}"
    );

    // The shards split the units: disjoint, and together all of them.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, s) in f.shards.iter().enumerate() {
        let c = Csv::read(s);
        assert!(!c.rows.is_empty(), "shard {} has units", i + 1);
        for id in c.ids() {
            assert!(seen.insert(id.clone(), i).is_none(), "{id} in two shards");
        }
        let m = rocsweep::results::manifest::read(s).unwrap();
        let shard = m.shard.expect("the manifest records the shard");
        assert_eq!((shard.index, shard.count), (i as u32 + 1, 3));
        assert_eq!(shard.from, "--shard");
        assert_eq!(m.units_planned as usize, c.rows.len());
    }
    assert_eq!(
        seen.keys().cloned().collect::<BTreeSet<_>>(),
        statuses.keys().cloned().collect::<BTreeSet<_>>()
    );

    let merged = f.root.join("merged");
    let o = merge(
        &[&f.shards[2], &f.shards[0], &f.shards[1]],
        &merged,
        &["--quiet"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = Csv::read(&merged);
    // The target figure.
    assert_eq!(m.statuses(), statuses);
    // And the rows come in the unsharded run's order.
    assert_eq!(m.ids(), full.ids());
    assert_eq!(m.header, full.header);
    // Shard 2 ran on two device pools: its rows say which.
    assert_eq!(
        m.values("device_index"),
        BTreeSet::from(["".to_string(), "0".to_string(), "1".to_string()])
    );
    assert_eq!(full.values("device_index"), BTreeSet::from([String::new()]));

    let man = rocsweep::results::manifest::read(&merged).unwrap();
    let info = man.merge.expect("the manifest says it was merged");
    assert_eq!(info.shard_count, 3);
    let names: Vec<&str> = info.shards.iter().map(|s| s.shard.as_str()).collect();
    assert_eq!(names, ["1/3", "2/3", "3/3"]);
    assert!(info.missing_shards.is_empty() && info.missing_units == 0);
    assert!(man.shard.is_none());
    assert_eq!(man.units_planned, 20);
    assert_eq!(man.counts.values().sum::<u64>(), 20);
    assert_eq!(man.counts.get("crash"), Some(&1));
    // The report is drawn as after `run`.
    assert!(merged.join("report.html").exists());
    // A merged run is not resumable: its shards are.
    let o = run(&["run", "--resume"], &[&merged], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("merged from shards"), "{}", text(&o));
}

#[test]
fn merge_refuses_different_sweeps_overrides_versions_splits_and_duplicates() {
    let f = fixture();
    let (s1, s2, s3) = (&f.shards[0], &f.shards[1], &f.shards[2]);
    let out = f.root.join("merged");
    let refused = |o: &Output, needles: &[&str]| {
        assert_eq!(o.status.code(), Some(2), "{}", text(o));
        let err = String::from_utf8_lossy(&o.stderr);
        for n in needles {
            assert!(err.contains(n), "`{n}` not in:\n{err}");
        }
        assert!(!out.exists(), "nothing written");
    };

    // A different sweep: one more size.
    let other = write_sweep(
        &f.root,
        "other.toml",
        &SWEEP.replace("1024]", "1024, 2048]"),
    );
    let o3 = f.root.join("other3");
    assert!(run_sweep(&other, &o3, &["--shard", "3/3"]).status.success());
    let o = merge(&[s1, s2, &o3], &out, &[]);
    refused(
        &o,
        &[&o3.display().to_string(), "a different sweep", "SHA-256"],
    );

    // The same sweep with different --axis overrides.
    let ov3 = f.root.join("override3");
    let sweep = f.sweep.to_str().unwrap();
    let o = run_sweep(
        Path::new(sweep),
        &ov3,
        &["--shard", "3/3", "--axis", "bytes=64,128,256,512,1024"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = merge(&[s1, s2, &ov3], &out, &[]);
    refused(
        &o,
        &[&ov3.display().to_string(), "different --axis overrides"],
    );

    // Another rocsweep version.
    let v3 = f.root.join("version3");
    copy_dir(s3, &v3);
    let path = v3.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["rocsweep_version"] = "0.0.1".into();
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let o = merge(&[s1, s2, &v3], &out, &[]);
    refused(
        &o,
        &[&v3.display().to_string(), "rocsweep version", "0.0.1"],
    );

    // A different split.
    let h1 = f.root.join("half1");
    assert!(
        run_sweep(&f.sweep, &h1, &["--shard", "1/2"])
            .status
            .success()
    );
    let o = merge(&[s1, s2, &h1], &out, &[]);
    refused(&o, &["a different split", "1/2", "1/3"]);

    // A run that is not a shard.
    let o = merge(&[s1, s2, &f.full], &out, &[]);
    refused(&o, &[&f.full.display().to_string(), "not a shard"]);

    // The same shard twice, under two names: the shard and one of its units are named.
    let again = f.root.join("shard2-copy");
    copy_dir(s2, &again);
    let o = merge(&[s1, s2, s3, &again], &out, &[]);
    let dup = Csv::read(s2).ids()[0].clone();
    refused(
        &o,
        &[
            "shard 2/3 is given 2 times",
            "duplicated unit",
            &format!(
                "unit {dup} is in {} and in {}",
                s2.display(),
                again.display()
            ),
        ],
    );

    // A shard that is not a directory, and an --out that is taken.
    let o = merge(&[s1, &f.root.join("nope")], &out, &[]);
    refused(&o, &["nope", "not a run directory"]);
    let o = merge(&[s1, s2, s3], s3, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists"));
}

#[test]
fn missing_shards_and_units_exit_6_and_write_nothing_unless_allowed() {
    let f = fixture();
    let (s1, s2, s3) = (&f.shards[0], &f.shards[1], &f.shards[2]);
    let out = f.root.join("merged");

    let o = merge(&[s1, s2], &out, &[]);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("shard 3/3 is missing"), "{err}");
    let lost = Csv::read(s3).rows.len();
    assert!(
        err.contains(&format!("{lost} of 20 planned units have no row")),
        "{err}"
    );
    assert!(err.contains("--allow-missing"), "{err}");
    assert!(!out.exists(), "nothing written");
    assert!(
        std::fs::read_dir(&f.root).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("staging")),
        "no staging directory left"
    );

    let o = merge(&[s1, s2], &out, &["--allow-missing", "--no-report"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("shard 3/3 is missing"));
    assert_eq!(Csv::read(&out).rows.len(), 20 - lost);
    let info = rocsweep::results::manifest::read(&out)
        .unwrap()
        .merge
        .unwrap();
    assert_eq!(info.missing_shards, ["3/3"]);
    assert_eq!(info.missing_units as usize, lost);
    assert!(!info.missing_examples.is_empty());

    // A shard that lost rows and never finished (killed): named, with the resume command.
    let cut = f.root.join("cut3");
    copy_dir(s3, &cut);
    truncate_rows(&cut, 1);
    let path = cut.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["finished_at"] = serde_json::Value::Null;
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let out2 = f.root.join("merged2");
    let o = merge(&[s1, s2, &cut], &out2, &[]);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("shard 3/3"), "{err}");
    assert!(err.contains("did not finish"), "{err}");
    assert!(
        err.contains(&format!("rocsweep run --resume {}", cut.display())),
        "{err}"
    );
    assert!(
        err.contains(&format!("{} of 20 planned units have no row", lost - 1)),
        "{err}"
    );
    assert!(!out2.exists());
}

#[test]
fn a_resumed_shard_runs_its_own_units_and_no_others() {
    let f = fixture();
    let s2 = &f.shards[1];
    let want = Csv::read(s2).statuses();
    // As if the machine went down after one unit: one row, no journal.
    truncate_rows(s2, 1);
    std::fs::remove_file(s2.join("journal.ndjson")).unwrap();
    // Shard 2 ran with --devices 0,1; the resume reuses them.
    let o = run(
        &["run", "--quiet", "--no-report", "--resume"],
        &[s2],
        &[("ROCSWEEP_TEST_FAULT", FAULT)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let c = Csv::read(s2);
    assert_eq!(c.statuses(), want);
    let m = rocsweep::results::manifest::read(s2).unwrap();
    assert_eq!(m.devices, [0, 1]);
    assert_eq!(m.resumed.len(), 1);
    assert_eq!(m.shard.map(|s| (s.index, s.count)), Some((2, 3)));
}

#[test]
fn bad_shard_and_device_values_are_usage_errors_naming_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write_sweep(tmp.path(), "sweep.toml", SWEEP);
    let s = sweep.to_str().unwrap();
    let out = tmp.path().join("run");
    let o_ = out.to_str().unwrap();
    for (args, needles) in [
        (vec!["--shard", "0/3"], vec!["--shard", "0/3", "1-based"]),
        (
            vec!["--shard", "4/3"],
            vec!["--shard", "4/3", "does not exist"],
        ),
        (vec!["--shard", "1/0"], vec!["--shard", "1/0"]),
        (vec!["--shard", "x/3"], vec!["--shard", "x/3"]),
        (vec!["--shard", "3"], vec!["--shard", "'3'", "I/N"]),
        (vec!["--shard-count", "3"], vec!["--shard-from-env"]),
        (
            vec!["--shard", "1/3", "--shard-from-env"],
            vec!["--shard", "--shard-from-env"],
        ),
        (
            vec!["--shard-from-env"],
            vec!["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"],
        ),
        (vec!["--devices", "0,0"], vec!["--devices", "0,0", "twice"]),
        (vec!["--devices", "gpu1"], vec!["--devices", "gpu1"]),
        (
            vec!["--devices", "0,2"],
            vec!["device 2 does not exist; the cpu backend has 2 device(s) (0..=1)"],
        ),
    ] {
        let mut a = vec!["run", s, "--out", o_];
        a.extend_from_slice(&args);
        let o = run(&a, &[], &[]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        for n in needles {
            assert!(err.contains(n), "{args:?}: `{n}` not in {err}");
        }
        assert!(!out.exists(), "{args:?} wrote nothing");
    }
    // A sweep that pins the device itself and --devices: one of them must go.
    let pinned = write_sweep(
        tmp.path(),
        "pinned.toml",
        &format!("{SWEEP}\n[env]\nCUDA_VISIBLE_DEVICES = \"1\"\n"),
    );
    let o = run(
        &[
            "run",
            pinned.to_str().unwrap(),
            "--out",
            o_,
            "--devices",
            "0",
        ],
        &[],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("the sweep sets CUDA_VISIBLE_DEVICES itself"),
        "{}",
        text(&o)
    );
    assert!(!out.exists());
    // Scheduler variables that do not describe a range are refused too.
    let o = run(
        &["run", s, "--out", o_, "--shard-from-env"],
        &[],
        &[
            ("SLURM_ARRAY_TASK_ID", "7"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "9"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("SLURM_ARRAY_TASK_ID=7"), "{}", text(&o));
    let o = run(
        &["run", s, "--out", o_, "--shard-from-env"],
        &[],
        &[("JOB_COMPLETION_INDEX", "1")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--shard-count"), "{}", text(&o));
    assert!(!out.exists());
}

#[test]
fn shard_from_env_reads_slurm_arrays_and_kubernetes_indexed_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write_sweep(tmp.path(), "sweep.toml", SWEEP);
    let s = sweep.to_str().unwrap();
    let dry = |extra: &[&str], env: &[(&str, &str)]| {
        let mut a = vec!["run", s, "--dry-run"];
        a.extend_from_slice(extra);
        let o = run(&a, &[], env);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let second = dry(&["--shard", "2/3"], &[]);
    assert!(
        second.ends_with("shard 2/3: 7 of 20 units (case x env combination)\n"),
        "{second}"
    );
    // sbatch --array=4-6: ids start at SLURM_ARRAY_TASK_MIN.
    let slurm = [
        ("SLURM_ARRAY_TASK_ID", "5"),
        ("SLURM_ARRAY_TASK_MIN", "4"),
        ("SLURM_ARRAY_TASK_MAX", "6"),
        ("SLURM_ARRAY_TASK_COUNT", "3"),
    ];
    assert_eq!(dry(&["--shard-from-env"], &slurm), second);
    // A Kubernetes indexed Job: 0-based JOB_COMPLETION_INDEX, count from --shard-count.
    let k8s = [("JOB_COMPLETION_INDEX", "1")];
    assert_eq!(
        dry(&["--shard-from-env", "--shard-count", "3"], &k8s),
        second
    );
    // Every shard's dry run together lists each (case, env combination) exactly once.
    let mut all: Vec<String> = (1..=3)
        .flat_map(|i| {
            let d = dry(&["--shard", &format!("{i}/3")], &[]);
            d.lines()
                .filter(|l| !l.starts_with("shard "))
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect();
    all.sort();
    let before = all.len();
    all.dedup();
    assert_eq!((before, all.len()), (20, 20));

    // A real run records where the shard came from, and its default directory says which shard.
    let o = bin()
        .current_dir(tmp.path())
        .args(["run", s, "--quiet", "--no-report", "--shard-from-env"])
        .envs(slurm)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let runs: Vec<PathBuf> = std::fs::read_dir(tmp.path().join("reports/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1);
    let name = runs[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("shard-test-") && name.ends_with("-shard-2-of-3"),
        "{name}"
    );
    let m = rocsweep::results::manifest::read(&runs[0]).unwrap();
    let shard = m.shard.unwrap();
    assert_eq!((shard.index, shard.count), (2, 3));
    assert!(
        shard.from.contains("SLURM_ARRAY_TASK_ID=5"),
        "{}",
        shard.from
    );
    assert_eq!(Csv::read(&runs[0]).rows.len(), 7);
}

/// A sweep whose every unit really hangs until the watchdog kills it (1 s): with two device
/// pools, two units are in flight at once, which the journal shows.
#[test]
fn device_pools_run_concurrently_in_their_own_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write_sweep(
        tmp.path(),
        "hang.toml",
        "name = \"pools\"\nop = \"copy\"\nbackend = \"cpu\"\n[axes]\nbytes = [64, 128, 256, 512]\n\
         [timing]\nenabled = false\n[limits]\nrun = 1.0\ngrace = 0.2\n",
    );
    let out = tmp.path().join("run");
    let o = run(
        &[
            "run",
            sweep.to_str().unwrap(),
            "--devices",
            "0,1",
            "--no-report",
            "--out",
        ],
        &[&out],
        &[("ROCSWEEP_TEST_FAULT", "memory=pageable:hang@run")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let c = Csv::read(&out);
    assert_eq!(c.rows.len(), 4);
    assert_eq!(c.values("status"), BTreeSet::from(["hang".to_string()]));
    assert_eq!(
        c.values("device_index"),
        BTreeSet::from(["0".to_string(), "1".to_string()])
    );

    // The journal: the most units started and not yet finished at any moment.
    let journal = std::fs::read_to_string(out.join("journal.ndjson")).unwrap();
    let (mut open, mut most) = (0i32, 0i32);
    for line in journal.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        match v["ev"].as_str() {
            Some("started") => open += 1,
            Some("finished") => open -= 1,
            _ => {}
        }
        most = most.max(open);
    }
    assert_eq!(most, 2, "two pools, two units in flight:\n{journal}");

    // Each pool's workers got their device's variable.
    let logs: HashMap<String, String> = std::fs::read_dir(out.join("workers"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    for d in ["0", "1"] {
        let own: Vec<&String> = logs
            .iter()
            .filter(|(n, _)| n.starts_with(&format!("worker-dev{d}-")))
            .map(|(_, t)| t)
            .collect();
        assert!(!own.is_empty(), "device {d} had workers: {:?}", logs.keys());
        for t in own {
            assert!(t.contains(&format!("ROCSWEEP_DEVICE_INDEX={d}")), "{t}");
        }
    }
}

/// Device 0 or 1 crashes on one unit and then fails its health probes: the other pool takes the
/// remaining units, and the run still has every unit with no `skipped` row.
#[test]
fn a_device_that_fails_its_health_probe_leaves_its_units_to_the_other() {
    let tmp = tempfile::tempdir().unwrap();
    // The first unit crashes; each of the others takes ~0.2 s, so the other pool is still busy
    // when the failing one has spent its probes.
    let sweep = write_sweep(
        tmp.path(),
        "probe.toml",
        "name = \"leave\"\nop = \"copy\"\nbackend = \"cpu\"\n[axes]\nbytes = [64, 128, 256, 512, 1024, 2048]\n\
         [timing]\nmin_samples = 100000\nmax_samples = 1000000\ntarget_noise = 0\nmax_time = 0.2\n[limits]\nrun = 30\ngrace = 0.5\n",
    );
    let out = tmp.path().join("run");
    let o = run(
        &[
            "run",
            sweep.to_str().unwrap(),
            "--devices",
            "0,1",
            "--no-report",
            "--out",
        ],
        &[&out],
        &[("ROCSWEEP_TEST_FAULT", "bytes=64:segv@run;probe:segv@run")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("failed its health probe; the other devices take its remaining units"),
        "{}",
        text(&o)
    );
    let c = Csv::read(&out);
    let st = c.statuses();
    assert_eq!(st.len(), 6);
    assert_eq!(st.values().filter(|s| *s == "crash").count(), 1, "{st:?}");
    assert_eq!(st.values().filter(|s| *s == "ok").count(), 5, "{st:?}");
}

#[test]
fn run_directories_without_the_device_index_column_still_load_and_resume() {
    // The committed fixtures predate the column.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/release-a");
    let (header, _) = rocsweep::results::csv::read(&fixture.join("results.csv")).unwrap();
    assert!(!header.iter().any(|h| h == "device_index"));
    let data = rocsweep::results::rundata::RunData::load(&fixture).unwrap();
    assert!(!data.rows.is_empty());
    assert_eq!(data.param_names[0], "m");

    // Resuming such a run upgrades its results.csv, rows kept.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("old");
    copy_dir(&fixture, &dir);
    let before = Csv::read(&dir);
    // The last row is lost from results.csv but not from the journal, which holds it in the
    // old layout too: the resume restores it in the new one.
    let last = before.rows.last().unwrap().clone();
    let id = last[before.col("unit_id")].clone();
    let record = serde_json::json!({"ev": "finished", "unit": id, "status": "ok", "row": last});
    let mut journal = std::fs::read_to_string(dir.join("journal.ndjson")).unwrap();
    journal.push_str(&format!("{record}\n"));
    std::fs::write(dir.join("journal.ndjson"), journal).unwrap();
    truncate_rows(&dir, before.rows.len() - 1);
    let o = run(&["run", "--quiet", "--no-report", "--resume"], &[&dir], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let after = Csv::read(&dir);
    assert!(after.header.iter().any(|h| h == "device_index"));
    assert_eq!(after.statuses(), before.statuses());
    // Restored from the journal (not run again): the same measurements, in the new columns.
    let restored = after
        .rows
        .iter()
        .find(|r| r[after.col("unit_id")] == id)
        .unwrap();
    for c in ["wall_ms", "median_ms", "m", "dtype"] {
        assert_eq!(restored[after.col(c)], last[before.col(c)], "{c}");
    }
    assert_eq!(restored[after.col("device_index")], "");
    rocsweep::results::rundata::RunData::load(&dir).unwrap();
}

/// Keeps the header and the first `keep` rows of a run's results.csv.
fn truncate_rows(dir: &Path, keep: usize) {
    let p = dir.join("results.csv");
    let text = std::fs::read_to_string(&p).unwrap();
    let kept: Vec<&str> = text.lines().take(keep + 1).collect();
    std::fs::write(&p, format!("{}\n", kept.join("\n"))).unwrap();
}

/// sweeps/slurm/array.sbatch run by bash with the variables Slurm sets for the tasks of
/// `sbatch --array=4-7` (so it is tested where Slurm is not; tests/slurm.rs runs it under a real
/// Slurm): the tasks' directories merge to the unsharded run of its sweep.
#[test]
fn the_slurm_array_script_without_slurm_merges_to_the_unsharded_run() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let shards = tmp.path().join("shards");
    for id in 4..8 {
        let id = id.to_string();
        let o = Command::new("bash")
            .arg(repo.join("sweeps/slurm/array.sbatch"))
            .current_dir(repo)
            .env_remove("ROCSWEEP_TEST_FAULT")
            .env("ROCSWEEP", env!("CARGO_BIN_EXE_rocsweep"))
            .env("ROCSWEEP_SHARDS_DIR", &shards)
            .env("SLURM_ARRAY_JOB_ID", "77")
            .env("SLURM_ARRAY_TASK_ID", &id)
            .env("SLURM_ARRAY_TASK_MIN", "4")
            .env("SLURM_ARRAY_TASK_MAX", "7")
            .env("SLURM_ARRAY_TASK_STEP", "1")
            .env("SLURM_ARRAY_TASK_COUNT", "4")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "task {id}: {}", text(&o));
    }
    let dirs: Vec<PathBuf> = (4..8).map(|i| shards.join(format!("shard-{i}"))).collect();
    let refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let merged = tmp.path().join("merged");
    let o = merge(&refs, &merged, &["--quiet", "--no-report"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let full = tmp.path().join("full");
    let o = bin()
        .current_dir(repo)
        .args([
            "run",
            "sweeps/slurm/cpu-array.toml",
            "--quiet",
            "--no-report",
            "--out",
        ])
        .arg(&full)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let want = Csv::read(&full).statuses();
    assert_eq!(want.len(), 24);
    assert_eq!(Csv::read(&merged).statuses(), want);
}

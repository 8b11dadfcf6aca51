//! Issue 40, point 1: the trees users have are often incomplete. hipBLASLt ships no kernels for
//! RDNA1/RDNA2, many RDNA1 installs lack rocBLAS's, and MIOpen's db is a package of its own.
//! Every seed workflow (the RDNA1 map by grid with an env axis and `recommend`, by bisect; the
//! graph op; the probes) runs against the fake ROCm laid out as a tree missing, in turn,
//! rocBLAS's kernels, hipBLASLt's kernels, MIOpen's db, and all three, with a crash or hang in
//! each so that the health probe runs: the map stays whole (no `skipped` row), every unit has
//! its own status, and only the units of the missing library say what is missing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[path = "common/fake_rocm.rs"]
mod fake_rocm;
use fake_rocm::fake_library;

/// What a tree lacks for the device's target.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Lacks {
    RocblasKernels,
    HipblasltKernels,
    MiopenDb,
}

const ALL: &[Lacks] = &[
    Lacks::RocblasKernels,
    Lacks::HipblasltKernels,
    Lacks::MiopenDb,
];

/// A ROCm 5.7 tree (`root/lib`, `root/share/miopen/db`) whose libraries are the fake, with the
/// device files for gfx1010 except those `lacks` names.
fn tree(tmp: &Path, name: &str, lacks: &[Lacks]) -> PathBuf {
    let root = tmp.join(name);
    let lib = root.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    for n in [
        "libamdhip64.so.5",
        "libMIOpen.so.1",
        "libhipblaslt.so.0",
        "librocblas.so.3",
        "libhiprand.so.1",
    ] {
        std::os::unix::fs::symlink(fake_library(), lib.join(n)).unwrap();
    }
    let files = [
        (
            Lacks::RocblasKernels,
            "lib/rocblas/library",
            "TensileLibrary_lazy_gfx1010.dat",
        ),
        (
            Lacks::HipblasltKernels,
            "lib/hipblaslt/library",
            "TensileLibrary_lazy_gfx1010.dat",
        ),
        (Lacks::MiopenDb, "share/miopen/db", "gfx1010_40.kdb"),
    ];
    for (what, dir, file) in files {
        if !lacks.contains(&what) {
            std::fs::create_dir_all(root.join(dir)).unwrap();
            std::fs::write(root.join(dir).join(file), b"").unwrap();
        }
    }
    lib
}

struct Run {
    code: Option<i32>,
    stderr: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    dir: PathBuf,
}

impl Run {
    fn col(&self, name: &str) -> usize {
        self.header.iter().position(|h| h == name).unwrap()
    }

    fn get<'a>(&self, row: &'a [String], name: &str) -> &'a str {
        &row[self.col(name)]
    }

    /// Every row has a status of its own: none is `skipped`, every failure says why.
    fn assert_whole(&self, what: &str) {
        for r in &self.rows {
            let st = self.get(r, "status");
            assert_ne!(st, "skipped", "{what}: {r:?}\n{}", self.stderr);
            if st != "ok" {
                assert!(!self.get(r, "error").is_empty(), "{what}: {r:?}");
            }
        }
    }
}

fn run(lib: &Path, sweep: &Path, out: &Path, model: &str, fault: &str, extra: &[&str]) -> Run {
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .arg("run")
        .arg(sweep)
        .arg("--out")
        .arg(out)
        .arg("--rocm")
        .arg(lib)
        .args(["--quiet", "--no-report"])
        .args(extra)
        .env(
            "FAKE_ROCM_MODEL",
            format!("{ROOT}/tests/fake-rocm/models/{model}"),
        )
        .env("ROCSWEEP_TEST_FAULT", fault)
        .env_remove("ROCM_PATH")
        .env_remove("ROCSWEEP_ROCM")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let (header, rows) = rocsweep::results::csv::read(&out.join("results.csv"))
        .unwrap_or_else(|e| panic!("no results.csv ({e:?}); stderr:\n{stderr}"));
    Run {
        code: o.status.code(),
        stderr,
        header,
        rows,
        dir: out.to_path_buf(),
    }
}

/// The RDNA1 map, smaller than sweeps/rocm-rdna1-conv.toml (three channel pairs, sizes 32 to
/// 64), with `env_axes` lines.
fn map_sweep(tmp: &Path, name: &str, env_axes: &str) -> PathBuf {
    let p = tmp.join(format!("{name}.toml"));
    std::fs::write(
        &p,
        format!(
            "name = \"{name}\"\nop = \"conv2d\"\nbackend = \"rocm\"\n\
             [axes]\ndirection = \"fwd\"\nn = 1\nh = [32, 40, 48, 56, 64]\ndtype = \"f32\"\n\
             solver = \"find\"\n\
             [zip.channels]\nc_in = [3, 16, 32]\nc_out = [16, 32, 64]\n\
             {env_axes}\
             [limits]\ncompile = 3\nrun = 3\n\
             [timing]\nwarmup = 0\nmin_samples = 1\nmax_time = 0.02\n"
        ),
    )
    .unwrap();
    p
}

/// Seed 004's table: whether the fake RDNA1 card hangs at `c_in` and `h`.
fn hangs(c_in: u32, h: u32) -> bool {
    (c_in == 16 && h > 32) || (c_in == 32 && h > 48)
}

/// The map's rows, (combination, c_in, h) -> status, checked against seed 004's table.
fn check_map(r: &Run, what: &str) -> BTreeMap<(String, u32, u32), String> {
    r.assert_whole(what);
    let mut m = BTreeMap::new();
    for row in &r.rows {
        let c_in: u32 = r.get(row, "c_in").parse().unwrap();
        let h: u32 = r.get(row, "h").parse().unwrap();
        let st = r.get(row, "status").to_string();
        let class = match st.as_str() {
            "ok" | "inferred-ok" => "ok",
            "hang" | "inferred-fail" => "hang",
            other => panic!("{what}: unexpected status {other} in {row:?}"),
        };
        let want = if hangs(c_in, h) { "hang" } else { "ok" };
        assert_eq!(class, want, "{what}: c_in {c_in} h {h}: {row:?}");
        m.insert((r.get(row, "env").to_string(), c_in, h), st);
    }
    m
}

/// rocBLAS/hipBLASLt units (the graph op's GEMM) say what they lack, and nothing else does.
fn check_gemm_units(r: &Run, lacks: &[Lacks], crashed: &str, what: &str) {
    r.assert_whole(what);
    // hipBLASLt says NOT_SUPPORTED for every shape on this card, so the GEMM is rocBLAS's.
    let gemm_fails = lacks.contains(&Lacks::RocblasKernels);
    for row in &r.rows {
        let (st, err) = (r.get(row, "status"), r.get(row, "error"));
        let unit = r.get(row, "unit_id");
        if unit == crashed {
            assert_eq!(st, "crash", "{what}: {row:?}");
        } else if gemm_fails {
            assert_eq!(st, "error", "{what}: {row:?}");
            assert!(
                err.contains("KERNELS_MISSING") && err.contains("rocblas/library"),
                "{what}: the error names rocBLAS's kernels: {err}"
            );
        } else {
            assert_eq!(st, "ok", "{what}: {row:?}");
        }
    }
}

/// One tree, every workflow.
fn workflows(lacks: &[Lacks], name: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let lib = tree(t, name, lacks);
    let rdna1 = "rdna1-rocm57.toml";

    // The map by grid, over an env axis, then recommend on it.
    let env = "[env_axes]\nMIOPEN_DEBUG_CONV_GEMM = [\"0\", \"1\"]\n";
    let grid = run(
        &lib,
        &map_sweep(t, "grid", env),
        &t.join("grid"),
        rdna1,
        "",
        &[],
    );
    assert_eq!(grid.code, Some(0), "{name} grid: {}", grid.stderr);
    let map = check_map(&grid, &format!("{name} grid"));
    assert_eq!(map.len(), 30, "{name}: 2 combinations x 3 pairs x 5 sizes");
    assert_eq!(map.values().filter(|s| *s == "hang").count(), 12);
    let rec = t.join("rec");
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .arg("recommend")
        .arg(&grid.dir)
        .arg("--out")
        .arg(&rec)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(rec.join("recommend.md")).unwrap();
    assert_eq!(
        md.matches("Boundary along `h`").count(),
        2,
        "{name}: a boundary table per combination:\n{md}"
    );
    for line in ["| 16→32 | 32 | 40 |", "| 32→64 | 48 | 56 |"] {
        assert_eq!(md.matches(line).count(), 2, "{name}: `{line}`:\n{md}");
    }

    // The map by bisect.
    let b = run(
        &lib,
        &map_sweep(t, "bisect", ""),
        &t.join("bisect"),
        rdna1,
        "",
        &["--strategy", "bisect", "--along", "h"],
    );
    assert_eq!(b.code, Some(0), "{name} bisect: {}", b.stderr);
    assert_eq!(check_map(&b, &format!("{name} bisect")).len(), 15);

    // The graph op (GEMM -> conv -> ReLU captured), its first unit crashing.
    let graph = t.join("graph.toml");
    std::fs::write(
        &graph,
        "name = \"graph\"\nop = \"graph\"\nbackend = \"rocm\"\n[axes]\nchannels = [8, 16]\n\
         size = 16\nreplays = 3\ndtype = \"f32\"\nsolver = \"stream-capture\"\n\
         [timing]\nmin_samples = 1\nmax_time = 0.02\n",
    )
    .unwrap();
    let g = run(
        &lib,
        &graph,
        &t.join("graph"),
        rdna1,
        "channels=8:segv@compile",
        &[],
    );
    assert_eq!(g.rows.len(), 2, "{name} graph: {}", g.stderr);
    let crashed = g
        .rows
        .iter()
        .find(|r| g.get(r, "channels") == "8")
        .map(|r| g.get(r, "unit_id").to_string())
        .unwrap();
    check_gemm_units(&g, lacks, &crashed, &format!("{name} graph"));

    // The probes: copies, casts and normals use none of the three; one copy hangs.
    for (op, axes, fault) in [
        (
            "copy",
            "direction = [\"h2d\", \"d2h\"]\nbytes = [4096, 65536]",
            "bytes=4096&direction=h2d:hang@run",
        ),
        (
            "cast",
            "from = [\"bf16\", \"f32\"]\nto = \"f16\"\ncount = [4096, 65536]",
            "count=4096&from=bf16:segv@run",
        ),
        ("rng", "count = [4096, 65536]", "count=4096:segv@run"),
    ] {
        let f = t.join(format!("{op}.toml"));
        std::fs::write(
            &f,
            format!(
                "name = \"{op}\"\nop = \"{op}\"\nbackend = \"rocm\"\n[axes]\n{axes}\n\
                 [limits]\nrun = 2\n[timing]\nmin_samples = 1\nmax_time = 0.02\n"
            ),
        )
        .unwrap();
        let r = run(&lib, &f, &t.join(op), rdna1, fault, &[]);
        let what = format!("{name} {op}");
        r.assert_whole(&what);
        let failed: Vec<&str> = r
            .rows
            .iter()
            .map(|row| r.get(row, "status"))
            .filter(|s| *s != "ok")
            .collect();
        assert_eq!(
            failed.len(),
            1,
            "{what}: one fault, the rest ok: {:?}",
            r.rows
        );
        assert!(
            failed[0] == "hang" || failed[0] == "crash",
            "{what}: {failed:?}"
        );
    }

    // `probe` says what the tree lacks, and the device answers.
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(["probe", "--backend", "rocm", "--rocm"])
        .arg(&lib)
        .env(
            "FAKE_ROCM_MODEL",
            format!("{ROOT}/tests/fake-rocm/models/{rdna1}"),
        )
        .env_remove("ROCM_PATH")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{name} probe: {out}");
    let line = |prefix: &str| {
        out.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_default()
            .to_string()
    };
    for (prefix, lack) in [
        ("  rocBLAS: ", Lacks::RocblasKernels),
        ("  hipBLASLt: ", Lacks::HipblasltKernels),
    ] {
        assert_eq!(
            line(prefix).contains("no kernels for gfx1010"),
            lacks.contains(&lack),
            "{name} probe:\n{out}"
        );
    }
    assert_eq!(
        line("  MIOpen device files: ").contains("MIOpen lacks its db for gfx1010"),
        lacks.contains(&Lacks::MiopenDb),
        "{name} probe:\n{out}"
    );
}

#[test]
fn a_tree_without_rocblas_kernels_keeps_every_workflow_whole() {
    workflows(&[Lacks::RocblasKernels], "no-rocblas-kernels");
}

#[test]
fn a_tree_without_hipblaslt_kernels_keeps_every_workflow_whole() {
    workflows(&[Lacks::HipblasltKernels], "no-hipblaslt-kernels");
}

#[test]
fn a_tree_without_miopens_db_keeps_every_workflow_whole() {
    workflows(&[Lacks::MiopenDb], "no-miopen-db");
}

#[test]
fn a_tree_without_all_three_keeps_every_workflow_whole() {
    workflows(ALL, "no-kernels-no-db");
}

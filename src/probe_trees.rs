//! `probe --backend rocm`'s list of every ROCm tree on the machine: each tree's library
//! versions (from a worker of its own, told its tree through the environment: two HIP runtimes
//! never share a process), its device files, and which tree a run would use and why.

use crate::backend::BackendInfo;
use crate::backend::rocm::provenance;
use crate::rocm_tree::devfiles;
use crate::rocm_tree::discover::{self, Found, Places, ROCM_ENV};
use std::fmt::Write as _;

/// The libraries whose versions each tree line shows, by their `versions` key.
const LIBS: &[(&str, &str)] = &[
    ("HIP runtime", "HIP"),
    ("hipRTC", "hipRTC"),
    ("MIOpen", "MIOpen"),
    ("hipBLASLt", "hipBLASLt"),
    ("rocBLAS", "rocBLAS"),
    ("hipRAND (rocRAND version)", "hipRAND"),
];

/// "HIP 5.2.21153, hipRTC 5.2, MIOpen missing, ..." from a worker's versions.
fn versions_line(info: &BackendInfo) -> String {
    // Nothing loaded (no versions), or not even the HIP runtime (a file it cannot load): the
    // reason, not a list of "missing" that hides it (issue 40, D5).
    let no_hip = !info.versions.contains_key(LIBS[0].0);
    if let Some(why) = info.missing.as_ref().filter(|_| no_hip) {
        return format!("cannot be opened: {why}");
    }
    let parts: Vec<String> = LIBS
        .iter()
        .map(|(key, short)| match info.versions.get(*key) {
            Some(v) if v.contains("not found") => format!("{short} missing"),
            Some(v) if v.starts_with(|c: char| c.is_ascii_digit()) => {
                format!("{short} {}", v.split(" (").next().unwrap_or(v).trim())
            }
            Some(v) if v.starts_with(" (") => format!("{short} present"),
            Some(_) => format!("{short} unusable"),
            None => format!("{short} missing"),
        })
        .collect();
    let mut line = parts.join(", ");
    if let Some(m) = info.versions.get(provenance::MAPPED_KEY) {
        // The file list is in the chosen tree's own lines above; here only the verdict.
        let _ = write!(line, "; mapped: {}", m.split(" (").next().unwrap_or(m));
    }
    line
}

/// The bare gfx target of the probing worker's device, if it has one.
fn device_arch(info: &BackendInfo) -> Option<String> {
    let arch = info.versions.get("gcnArchName")?;
    let bare = arch.split(':').next().unwrap_or_default();
    bare.starts_with("gfx").then(|| bare.to_string())
}

/// One tree's lines.
fn tree_lines(s: &mut String, f: &Found, chosen: bool, info: &BackendInfo, arch: Option<&str>) {
    let mark = if chosen { "*" } else { " " };
    let _ = writeln!(
        s,
        "  {mark} {} (found from {})",
        f.tree.label(),
        f.source.describe()
    );
    let _ = writeln!(s, "      {}", versions_line(info));
    let files = devfiles::of(&f.tree);
    let _ = writeln!(s, "      device files: {}", devfiles::summary(&files));
    if let Some(arch) = arch {
        let missing = devfiles::missing_for(&files, arch);
        if missing.is_empty() {
            let _ = writeln!(s, "      for this GPU ({arch}): all present");
        } else {
            let _ = writeln!(
                s,
                "      for this GPU ({arch}): missing {}",
                missing.join(", ")
            );
            advise(s, f, arch, &files);
        }
    }
}

/// What a run would make of the device files `files` lacks for `arch` in `f`'s tree, and what
/// provides them (the same words as the run's rows and notes).
fn advise(s: &mut String, f: &Found, arch: &str, files: &[devfiles::DeviceFiles]) {
    let kernels: Vec<devfiles::DeviceFiles> = files
        .iter()
        .filter(|d| d.what == devfiles::ROCBLAS_WHAT || d.what == devfiles::HIPBLASLT_WHAT)
        .cloned()
        .collect();
    if !devfiles::missing_for(&kernels, arch).is_empty() {
        let _ = writeln!(
            s,
            "      rocBLAS and hipBLASLt units without their kernels are `error` rows \
             (KERNELS_MISSING); install the device files for {arch} (TheRock: {})",
            crate::rocm_tree::kernels::device_package(arch)
        );
    }
    if let Some(note) = crate::rocm_tree::kernels::miopen_note(&f.tree, arch) {
        let _ = writeln!(s, "      {note}");
    }
}

/// The tree list, given the info of the worker that used the process's own choice.
pub fn text(main: &BackendInfo) -> String {
    let places = Places::from_env();
    let found = discover::all(&places);
    let choice = discover::choose(&places);
    let arch = device_arch(main);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  trees found: {} (* = what a run uses; the order: --rocm, $ROCM_PATH, $VIRTUAL_ENV, \
         $CONDA_PREFIX, python3 on PATH, ~/.local, /opt/rocm, the system loader's path)",
        found.len()
    );
    match &choice {
        Ok(c) => {
            let _ = writeln!(s, "  a run uses {}", c.line());
            for n in &c.notes {
                let _ = writeln!(s, "  note: {n}");
            }
        }
        Err(why) => {
            let _ = writeln!(s, "  a run finds no tree: {why}");
        }
    }
    for f in &found {
        let chosen = choice
            .as_ref()
            .is_ok_and(|c| c.found.tree.path == f.tree.path);
        let info = if chosen {
            main.clone()
        } else {
            // The worker is told the tree as `--rocm` would name it.
            let named = match &f.source {
                discover::Source::Loader(_) => discover::SYSTEM.to_string(),
                _ => f.tree.path.display().to_string(),
            };
            let vars = [(ROCM_ENV.to_string(), named)];
            match crate::exec::supervise::oneoff::OneOff::start_with("rocm", &vars) {
                Ok(w) => w.info.clone(),
                Err(why) => BackendInfo {
                    missing: Some(why),
                    ..BackendInfo::default()
                },
            }
        };
        tree_lines(&mut s, f, chosen, &info, arch.as_deref());
    }
    s
}

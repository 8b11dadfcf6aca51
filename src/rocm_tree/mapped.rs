//! The in-process check of what is really mapped after the libraries are loaded: exactly one
//! HIP runtime, each ROCm library once, every one from the chosen tree. A library's own RPATH,
//! `LD_LIBRARY_PATH` or a preload can pull a second copy in from elsewhere; then the results
//! would describe a stack nobody runs, so the mix is reported naming both files.

use std::path::{Path, PathBuf};

/// File-name stems of ROCm's libraries (the part before `.so`).
const STEMS: &[&str] = &[
    "libamdhip64",
    "libhiprtc",
    "libhiprtc-builtins",
    "libMIOpen",
    "libhipblaslt",
    "librocblas",
    "libhiprand",
    "librocrand",
    "libhsa-runtime64",
    "libhsakmt",
    "libamd_comgr",
    "librocm_smi64",
];

/// The stem of a ROCm library's file name, if it is one.
fn stem(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?;
    let (base, _) = name.split_once(".so")?;
    STEMS.iter().copied().find(|s| *s == base)
}

/// The distinct files mapped into a process, from the bytes of /proc/PID/maps. The kernel
/// writes a newline in a path as `\012` (issue 40, D6) and nothing else escaped; paths need
/// not be UTF-8.
pub fn mapped_files(maps: &[u8]) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut v: Vec<PathBuf> = Vec::new();
    for line in maps.split(|&b| b == b'\n') {
        // address perms offset dev inode path (the path may hold spaces).
        let mut fields = line.splitn(6, |&b| b == b' ');
        let inode = fields.nth(4).unwrap_or(b"0");
        let path = fields.next().unwrap_or(b"");
        let path = &path[path.iter().take_while(|&&b| b == b' ').count()..];
        if inode == b"0" || !path.starts_with(b"/") {
            continue;
        }
        let path = path.strip_suffix(b" (deleted)").unwrap_or(path);
        let decoded = unescape_newlines(path);
        let p = PathBuf::from(std::ffi::OsStr::from_bytes(&decoded));
        if !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

/// `\012` back to the newline the kernel escaped.
fn unescape_newlines(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    let mut i = 0;
    while i < path.len() {
        if path[i..].starts_with(b"\\012") {
            out.push(b'\n');
            i += 4;
        } else {
            out.push(path[i]);
            i += 1;
        }
    }
    out
}

/// The tree's directories and the directories of the files opened from it, with symlinks
/// resolved (the kernel names a mapped file by its real path).
fn tree_dirs(roots: &[PathBuf], opened: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = roots.to_vec();
    dirs.extend(roots.iter().filter_map(|r| std::fs::canonicalize(r).ok()));
    for f in opened {
        if let Some(parent) = std::fs::canonicalize(f)
            .ok()
            .and_then(|r| r.parent().map(Path::to_path_buf))
        {
            dirs.push(parent);
        }
    }
    dirs
}

/// Checks the mapped files (`mapped`, from [`mapped_files`]) against the chosen tree: Ok with
/// the ROCm files mapped, or the first problem found, naming both files.
pub fn check(
    mapped: &[PathBuf],
    roots: &[PathBuf],
    opened: &[PathBuf],
) -> Result<Vec<PathBuf>, String> {
    let dirs = tree_dirs(roots, opened);
    // A file opened under a ROCm name counts as that library whatever its real name is (the
    // fake ROCm is one file behind every name).
    let known: Vec<(PathBuf, &'static str)> = opened
        .iter()
        .filter_map(|f| Some((std::fs::canonicalize(f).ok()?, stem(f)?)))
        .collect();
    let rocm: Vec<(&'static str, &PathBuf)> = mapped
        .iter()
        .filter_map(|p| {
            stem(p)
                .or_else(|| known.iter().find(|(k, _)| k == p).map(|(_, s)| *s))
                .map(|s| (s, p))
        })
        .collect();
    for (i, (s, a)) in rocm.iter().enumerate() {
        if let Some((_, b)) = rocm[i + 1..].iter().find(|(t, _)| t == s) {
            let what = if *s == "libamdhip64" {
                "two HIP runtimes".to_string()
            } else {
                format!("{s} twice")
            };
            return Err(format!(
                "{what} are mapped into this process: {} and {}",
                a.display(),
                b.display()
            ));
        }
    }
    let hip = rocm
        .iter()
        .find(|(s, _)| *s == "libamdhip64")
        .map(|(_, p)| p.display().to_string())
        .unwrap_or_else(|| "(no HIP runtime mapped)".into());
    for (_, p) in &rocm {
        if !dirs.iter().any(|d| p.starts_with(d)) {
            let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
            return Err(format!(
                "{} is mapped from outside the chosen ROCm tree ({}), whose HIP runtime is {hip}",
                p.display(),
                roots.join(", ")
            ));
        }
    }
    Ok(rocm.into_iter().map(|(_, p)| p.clone()).collect())
}

/// [`check`] on this process's own maps.
pub fn check_self(roots: &[PathBuf], opened: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let maps = std::fs::read("/proc/self/maps")
        .map_err(|e| format!("cannot read /proc/self/maps to check the ROCm libraries: {e}"))?;
    check(&mapped_files(&maps), roots, opened)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
7f0000000000-7f0000001000 r--p 00000000 08:01 1234                       /v/core/lib/libamdhip64.so.6
7f0000001000-7f0000002000 r-xp 00001000 08:01 1234                       /v/core/lib/libamdhip64.so.6
7f0000003000-7f0000004000 r--p 00000000 08:01 99                         /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000005000-7f0000006000 rw-p 00000000 00:00 0                          [heap]
7f0000007000-7f0000008000 r--p 00000000 08:01 555                        /v/libs/lib/libMIOpen.so.1
";

    #[test]
    fn one_hip_runtime_and_every_library_from_the_tree_passes() {
        let files = mapped_files(MAPS.as_bytes());
        assert_eq!(files.len(), 3, "{files:?}");
        let roots = [PathBuf::from("/v/core"), PathBuf::from("/v/libs")];
        let ok = check(&files, &roots, &[]).expect("one tree");
        assert_eq!(
            ok,
            vec![
                PathBuf::from("/v/core/lib/libamdhip64.so.6"),
                PathBuf::from("/v/libs/lib/libMIOpen.so.1")
            ]
        );
    }

    #[test]
    fn a_second_hip_runtime_is_named_with_the_first() {
        let maps = format!(
            "{MAPS}7f0000009000-7f000000a000 r--p 00000000 08:01 777   /usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153\n"
        );
        let roots = [PathBuf::from("/v")];
        let e = check(&mapped_files(maps.as_bytes()), &roots, &[]).unwrap_err();
        assert_eq!(
            e,
            "two HIP runtimes are mapped into this process: /v/core/lib/libamdhip64.so.6 and \
             /usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153"
        );
    }

    #[test]
    fn a_library_from_outside_the_tree_is_named_with_the_trees_hip() {
        let roots = [PathBuf::from("/v/core")];
        let e = check(&mapped_files(MAPS.as_bytes()), &roots, &[]).unwrap_err();
        assert!(
            e.starts_with(
                "/v/libs/lib/libMIOpen.so.1 is mapped from outside the chosen ROCm tree (/v/core)"
            ),
            "{e}"
        );
        assert!(
            e.ends_with("whose HIP runtime is /v/core/lib/libamdhip64.so.6"),
            "{e}"
        );
    }

    #[test]
    fn only_rocm_libraries_count() {
        assert_eq!(
            stem(Path::new("/x/libamdhip64.so.5.2.21153")),
            Some("libamdhip64")
        );
        assert_eq!(
            stem(Path::new("/x/libhiprtc-builtins.so.5")),
            Some("libhiprtc-builtins")
        );
        assert_eq!(stem(Path::new("/x/libc.so.6")), None);
        assert_eq!(stem(Path::new("/x/libfake_rocm.so")), None);
    }

    #[test]
    fn a_newline_in_a_path_escaped_by_the_kernel_is_read_back() {
        let maps = b"7f0000000000-7f0000001000 r--p 00000000 08:01 1234   /r/a\\012b/lib/libamdhip64.so.5\n\
7f0000002000-7f0000003000 r--p 00000000 08:01 1235   /r/\xff/libMIOpen.so.1 (deleted)\n";
        let files = mapped_files(maps);
        assert_eq!(files[0], PathBuf::from("/r/a\nb/lib/libamdhip64.so.5"));
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(files[1].as_os_str().as_bytes(), b"/r/\xff/libMIOpen.so.1");
        let roots = [PathBuf::from("/r/a\nb")];
        assert!(check(&files[..1], &roots, &[]).is_ok());
    }
}

//! Every file a run directory or a report holds is written whole or not at all: into a
//! temporary file beside it, fsynced, then renamed onto its name. A failure (a full disk, a
//! read-only or immutable file) leaves the old file as it was and removes the temporary one,
//! so no `.tmp` outlives a failed command and no reader ever sees half an image.
//!
//! Nothing planted in a directory redirects a write (issue 40, S3): the temporary file is
//! created new (O_CREAT|O_EXCL, an unpredictable name, by `tempfile`), it must still be that
//! file when it is renamed, and a destination that is a symbolic link is refused, as is a
//! directory below the run directory that is one ([`refuse_links`]).

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path};

/// The error for a path that is, or passes through, a symbolic link.
fn linked(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "{} is a symbolic link; rocsweep does not write through links in a run directory \
             (remove it, or give the file's real place)",
            path.display()
        ),
    )
}

/// Refuses `path` when it is a symbolic link.
pub fn refuse_link(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(linked(path)),
        _ => Ok(()),
    }
}

/// Refuses `path` when it, or a directory between `root` and it, is a symbolic link. `root`
/// itself (the directory the user named) may be one.
pub fn refuse_links(root: &Path, path: &Path) -> std::io::Result<()> {
    let Ok(rel) = path.strip_prefix(root) else {
        return refuse_link(path);
    };
    let mut at = root.to_path_buf();
    for c in rel.components() {
        if let Component::Normal(name) = c {
            at.push(name);
            refuse_link(&at)?;
        }
    }
    Ok(())
}

/// Opens `path` for appending, creating it, without following a symbolic link at its name.
pub fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::File::options()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => linked(path),
            _ => e,
        })
}

/// A new temporary file beside `path`, named `.NAME.XXXXXX.tmp.EXT` (the plotting library
/// picks the image format by the extension).
fn temporary(path: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let stem = path
        .file_stem()
        .map_or_else(|| "rocsweep".into(), |s| s.to_string_lossy().into_owned());
    let suffix = match path.extension() {
        Some(ext) => format!(".tmp.{}", ext.to_string_lossy()),
        None => ".tmp".to_string(),
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // The mode a file made by `File::create` gets (0666 less the umask), not tempfile's 0600:
    // a run directory's files are read by others (a shared cluster's run, a web server).
    tempfile::Builder::new()
        .prefix(&format!(".{stem}."))
        .suffix(&suffix)
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
}

/// Writes `path` through a new temporary file: `fill` writes the temporary file (given its
/// path), which is then fsynced and renamed onto `path`. On any error the temporary file is
/// removed and `path` is untouched. Refused when `path` is a symbolic link, or when the
/// temporary file was replaced while `fill` wrote it.
pub fn write_via<E: From<std::io::Error>>(
    path: &Path,
    fill: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    refuse_link(path)?;
    let tmp = temporary(path)?;
    let made = tmp.as_file().metadata()?;
    fill(tmp.path())?;
    let now = std::fs::symlink_metadata(tmp.path())?;
    if !now.file_type().is_file() || now.dev() != made.dev() || now.ino() != made.ino() {
        return Err(std::io::Error::other(format!(
            "{} was replaced while rocsweep wrote it; {} was not changed",
            tmp.path().display(),
            path.display()
        ))
        .into());
    }
    tmp.as_file().sync_all()?;
    refuse_link(path)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes `bytes` to `path` whole or not at all (see [`write_via`]), through the temporary
/// file's own handle.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    refuse_link(path)?;
    let mut tmp = temporary(path)?;
    tmp.write_all(bytes.as_ref())?;
    tmp.as_file().sync_all()?;
    refuse_link(path)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_written_file_gets_the_mode_a_created_file_gets() {
        let d = tempfile::tempdir().unwrap();
        let made = d.path().join("made.txt");
        std::fs::File::create(&made).unwrap();
        write(&d.path().join("a.md"), "x").unwrap();
        write_via(&d.path().join("b.svg"), |p| std::fs::write(p, "y")).unwrap();
        let mode = |name: &str| {
            let m = std::fs::metadata(d.path().join(name)).unwrap();
            m.permissions().mode() & 0o777
        };
        assert_eq!(mode("a.md"), mode("made.txt"));
        assert_eq!(mode("b.svg"), mode("made.txt"));
    }

    #[test]
    fn the_temporary_name_is_new_and_keeps_the_extension() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("heatmap.png");
        let mut seen = None;
        write_via(&p, |tmp| {
            let name = tmp.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                name.starts_with(".heatmap.") && name.ends_with(".tmp.png"),
                "{name}"
            );
            assert_ne!(name, ".heatmap.tmp.png", "unpredictable");
            seen = Some(name);
            std::fs::write(tmp, "png")
        })
        .unwrap();
        assert!(seen.is_some());
        assert_eq!(names(dir.path()), ["heatmap.png"]);
    }

    #[test]
    fn a_failed_fill_leaves_the_old_file_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "old").unwrap();
        let r: std::io::Result<()> = write_via(&p, |tmp| {
            std::fs::write(tmp, "half")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(names(dir.path()), ["a.txt"]);
        write(&p, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
    }

    #[test]
    fn a_planted_link_never_redirects_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "keep").unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        // At the old predictable temporary name: ignored, the write goes to a new file.
        std::os::unix::fs::symlink(&outside, run.join(".summary.tmp.md")).unwrap();
        write(&run.join("summary.md"), "mine").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        let real = std::fs::symlink_metadata(run.join("summary.md")).unwrap();
        assert!(real.file_type().is_file());
        // At the file's own name: refused, naming it; the target is untouched.
        std::os::unix::fs::symlink(&outside, run.join("report.html")).unwrap();
        let e = write(&run.join("report.html"), "x").unwrap_err();
        assert!(
            e.to_string().contains("report.html is a symbolic link"),
            "{e}"
        );
        let e = write_via(&run.join("report.html"), |t| std::fs::write(t, "x")).unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        // Appending and directories below the run directory.
        let e = open_append(&run.join("report.html")).unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        std::os::unix::fs::symlink(dir.path(), run.join("workers")).unwrap();
        let e = refuse_links(&run, &run.join("workers/worker-0001.log")).unwrap_err();
        assert!(e.to_string().contains("workers is a symbolic link"), "{e}");
        assert!(refuse_links(&run, &run.join("summary.md")).is_ok());
    }

    #[test]
    fn a_temporary_file_replaced_during_the_fill_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "keep").unwrap();
        let p = dir.path().join("a.csv");
        let r: std::io::Result<()> = write_via(&p, |tmp| {
            std::fs::remove_file(tmp)?;
            std::os::unix::fs::symlink(&outside, tmp)?;
            Ok(())
        });
        let e = r.unwrap_err();
        assert!(
            e.to_string()
                .contains("was replaced while rocsweep wrote it"),
            "{e}"
        );
        assert!(!p.exists());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
    }
}

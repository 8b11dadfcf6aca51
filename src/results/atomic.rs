//! Every file a run directory or a report holds is written whole or not at all: into a
//! temporary file beside it, fsynced, then renamed onto its name. A failure (a full disk, a
//! read-only or immutable file) leaves the old file as it was and removes the temporary one,
//! so no `.tmp` outlives a failed command and no reader ever sees half an image.

use std::path::{Path, PathBuf};

/// The temporary name for `path`: `.NAME.tmp.EXT` beside it, keeping the extension (the
/// plotting library picks the image format by it).
pub fn tmp_path(path: &Path) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let name = match (stem, path.extension()) {
        (Some(stem), Some(ext)) => format!(".{stem}.tmp.{}", ext.to_string_lossy()),
        (Some(stem), None) => format!(".{stem}.tmp"),
        _ => ".rocsweep.tmp".to_string(),
    };
    path.with_file_name(name)
}

/// Writes `path` through its temporary file: `fill` writes the temporary file (given its
/// path), which is then fsynced and renamed onto `path`. On any error the temporary file is
/// removed and `path` is untouched.
pub fn write_via<E: From<std::io::Error>>(
    path: &Path,
    fill: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    let tmp = tmp_path(path);
    let done = fill(&tmp).and_then(|()| {
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    });
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// Writes `bytes` to `path` whole or not at all (see [`write_via`]).
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    write_via(path, |tmp| std::fs::write(tmp, bytes.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temporary_name_keeps_the_extension() {
        assert_eq!(
            tmp_path(Path::new("/r/heatmap.png")),
            Path::new("/r/.heatmap.tmp.png")
        );
        assert_eq!(tmp_path(Path::new("/r/LOG")), Path::new("/r/.LOG.tmp"));
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
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        write(&p, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
    }
}

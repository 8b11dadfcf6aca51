//! Where a run writes: `reports/runs/<name>-<utc-timestamp>/` or `--out DIR`.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("run directory {0} already exists and is not empty; choose another --out")]
    NotEmpty(PathBuf),
    #[error("{0} exists and is not a directory")]
    NotADirectory(PathBuf),
    #[error("cannot create run directory {0}: {1}")]
    Create(PathBuf, std::io::Error),
    #[error("--out {0} is the current directory (or one of its parents); name a new directory")]
    Current(PathBuf),
}

/// Opens a file of a run directory for reading. Only a regular file inside the directory is
/// opened: a FIFO would block every reader forever in open(2), a device or socket is not a
/// run's file, and a symlink that leads outside the directory is not the run's. The open
/// itself never blocks (O_NONBLOCK, then fstat). A missing file is `NotFound`, as from
/// `File::open`; anything refused is `InvalidInput` naming the path and what it is.
pub fn open_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let refused = |what: String| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{what}; a run directory's files are regular files"),
        )
    };
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        let target = std::fs::canonicalize(path)?;
        let dir = path
            .parent()
            .map(std::fs::canonicalize)
            .transpose()?
            .unwrap_or_default();
        if !target.starts_with(&dir) {
            return Err(refused(format!(
                "{} is a symlink to {}, outside the run directory",
                path.display(),
                target.display()
            )));
        }
    }
    let f = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let t = f.metadata()?.file_type();
    if !t.is_file() {
        let what = if t.is_fifo() {
            "a FIFO"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_block_device() || t.is_char_device() {
            "a device"
        } else if t.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(refused(format!("{} is {what}", path.display())));
    }
    Ok(f)
}

/// An error of [`open_file`] or a read after it, as a message that names `path` once.
pub fn describe(path: &Path, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::InvalidInput => e.to_string(),
        _ => format!("{}: {e}", path.display()),
    }
}

/// The bytes of a run directory's file (see [`open_file`]).
pub fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::new();
    open_file(path)?.read_to_end(&mut buf)?;
    Ok(buf)
}

/// The text of a run directory's file (see [`open_file`]).
pub fn read_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_file(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The default location for a sweep named `name`, stamped with the UTC time.
pub fn default_path(name: &str, now: chrono::DateTime<chrono::Utc>) -> PathBuf {
    Path::new("reports")
        .join("runs")
        .join(format!("{name}-{}", now.format("%Y%m%dT%H%M%SZ")))
}

/// `dir`, or where it exists, the first of `dir-2`, `dir-3`, ... that does not.
pub fn fresh(dir: &Path) -> PathBuf {
    let mut candidate = dir.to_path_buf();
    let mut n = 2;
    while std::fs::symlink_metadata(&candidate).is_ok() && n < 10_000 {
        candidate = PathBuf::from(format!("{}-{n}", dir.display()));
        n += 1;
    }
    candidate
}

/// Checks that `dir` can hold a new run without creating anything (bad input must leave no trace).
pub fn check_free(dir: &Path) -> Result<(), RunDirError> {
    // The run is assembled beside `dir` and renamed onto it: the current directory would be
    // replaced under the user's shell.
    if let (Ok(cwd), Ok(real)) = (std::env::current_dir(), std::fs::canonicalize(dir))
        && cwd.starts_with(&real)
    {
        return Err(RunDirError::Current(dir.to_path_buf()));
    }
    if dir.exists() {
        if !dir.is_dir() {
            return Err(RunDirError::NotADirectory(dir.to_path_buf()));
        }
        let empty = std::fs::read_dir(dir)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if !empty {
            return Err(RunDirError::NotEmpty(dir.to_path_buf()));
        }
    }
    Ok(())
}

/// A new run directory being assembled in a hidden sibling of its place, renamed into place
/// by `publish`. Dropped unpublished (an error, an early return), it removes the staging
/// directory and any parent directories it created, so a run that never started leaves no
/// trace; a staging directory left by a killed process is removed by the next run beside it.
pub struct Staging {
    pub path: PathBuf,
    /// Where the run goes (a symlink to an empty directory resolved to that directory).
    target: PathBuf,
    /// The first ancestor this created, if any.
    created: Option<PathBuf>,
    published: bool,
}

const STAGING_MARK: &str = ".staging-";

impl Staging {
    pub fn create(dir: &Path) -> Result<Staging, RunDirError> {
        check_free(dir)?;
        // An existing empty directory (or a symlink to one) is replaced by the run: rename
        // onto the real directory, so a symlink keeps pointing at it.
        let target = if dir.exists() {
            std::fs::canonicalize(dir).map_err(|e| RunDirError::Create(dir.to_path_buf(), e))?
        } else {
            dir.to_path_buf()
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run".into());
        let path = target.with_file_name(format!(".{name}{STAGING_MARK}{}", std::process::id()));
        let created = path
            .ancestors()
            .skip(1)
            .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
            .last()
            .map(Path::to_path_buf);
        std::fs::create_dir_all(&path).map_err(|e| {
            remove_created(&path, created.as_deref());
            RunDirError::Create(dir.to_path_buf(), e)
        })?;
        remove_abandoned(&path, &name);
        Ok(Staging {
            path,
            target,
            created,
            published: false,
        })
    }

    /// Names another place for the run (`fresh`'s pick after a collision); publish moves it
    /// there.
    pub fn retarget(&mut self, dir: &Path) {
        self.target = dir.to_path_buf();
    }

    /// Moves the staged run into place. The target may exist only as an empty directory (a
    /// second run that published first makes this fail, and this one's staging goes).
    pub fn publish(&mut self) -> std::io::Result<()> {
        if self.target.exists() {
            std::fs::remove_dir(&self.target)?;
        }
        std::fs::rename(&self.path, &self.target)?;
        self.published = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_dir_all(&self.path);
            remove_created(&self.path, self.created.as_deref());
        }
    }
}

/// Removes the now-empty parents of `path` up to and including `created`.
fn remove_created(path: &Path, created: Option<&Path>) {
    let Some(created) = created else { return };
    for a in path.ancestors().skip(1) {
        if std::fs::remove_dir(a).is_err() || a == created {
            break;
        }
    }
}

/// Staging directories of the same target left by processes that are gone (killed with -9
/// before they could publish or clean up).
fn remove_abandoned(own: &Path, name: &str) {
    let (Some(parent), Some(own_name)) = (own.parent(), own.file_name()) else {
        return;
    };
    let prefix = format!(".{name}{STAGING_MARK}");
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: kill with signal 0 only asks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if file != own_name && !alive {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The last component of a run directory, resolving `.` and `..` when it has none.
pub fn dir_label(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .or_else(|| {
            dir.canonicalize()
                .ok()?
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| dir.display().to_string())
}

/// A run directory that cannot be created is a failure; one that is taken or misnamed
/// (`--out`) is bad input.
impl From<RunDirError> for crate::error::CmdError {
    fn from(e: RunDirError) -> Self {
        match e {
            RunDirError::Create(..) => crate::error::CmdError::Failure(e.to_string()),
            _ => crate::error::CmdError::BadInput(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect()
    }

    #[test]
    fn the_second_of_two_runs_into_one_out_fails_and_leaves_no_staging() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run");
        let mut a = Staging::create(&out).unwrap();
        // Both passed the check before either published (started in the same instant); the
        // second is dropped unpublished after its publish fails, as run() does.
        let mut b = Staging {
            path: tmp.path().join(".run.staging-other"),
            target: out.clone(),
            created: None,
            published: false,
        };
        std::fs::create_dir(&b.path).unwrap();
        std::fs::write(a.path.join("results.csv"), "x").unwrap();
        std::fs::write(b.path.join("results.csv"), "y").unwrap();
        a.publish().unwrap();
        assert!(b.publish().is_err(), "the run directory is taken");
        drop(b);
        assert!(matches!(check_free(&out), Err(RunDirError::NotEmpty(_))));
        assert_eq!(
            std::fs::read_to_string(out.join("results.csv")).unwrap(),
            "x"
        );
        assert!(hidden(tmp.path()).is_empty(), "{:?}", hidden(tmp.path()));
    }

    #[test]
    fn an_unpublished_staging_goes_with_the_parents_it_created() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("reports/runs/x");
        let s = Staging::create(&out).unwrap();
        assert!(s.path.exists());
        drop(s);
        assert!(!tmp.path().join("reports").exists());
    }

    #[test]
    fn a_staging_left_by_a_dead_process_is_removed_by_the_next_run() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run");
        // A pid above the kernel's pid_max (2^22) names no process.
        let dead = tmp.path().join(".run.staging-99999999");
        std::fs::create_dir(&dead).unwrap();
        let mut s = Staging::create(&out).unwrap();
        assert!(!dead.exists());
        s.publish().unwrap();
        assert!(hidden(tmp.path()).is_empty());
    }

    #[test]
    fn a_symlink_to_an_empty_directory_receives_the_run() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let mut s = Staging::create(&link).unwrap();
        std::fs::write(s.path.join("results.csv"), "x").unwrap();
        s.publish().unwrap();
        assert_eq!(
            std::fs::read_to_string(link.join("results.csv")).unwrap(),
            "x"
        );
        assert!(hidden(tmp.path()).is_empty());
    }
}

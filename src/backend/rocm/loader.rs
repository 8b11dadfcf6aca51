//! Finding and opening ROCm's shared libraries at run time (their tables of raw symbols are the
//! engine's `api!`). Nothing here is linked at build time: one binary serves ROCm 5.7, 6.x and
//! 7.x, and builds on a machine with no ROCm at all.

use crate::backend::UnitError;
use crate::backend::engine::runtime::Ptr;
use crate::rocm_tree::discover::{self, Choice};
use std::ffi::c_int;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// An opened library and the file it came from.
pub struct Loaded {
    pub lib: Arc<libloading::Library>,
    pub path: String,
}

/// The tree this process opens ROCm from, chosen once (see `discover.rs`), or why there is none.
pub fn choice() -> &'static Result<Choice, String> {
    static CHOICE: OnceLock<Result<Choice, String>> = OnceLock::new();
    CHOICE.get_or_init(|| discover::choose(&discover::Places::from_env()))
}

/// Every file opened so far, by the absolute path it was opened under.
fn opened_list() -> &'static Mutex<Vec<PathBuf>> {
    static OPENED: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
    OPENED.get_or_init(|| Mutex::new(Vec::new()))
}

/// The files opened so far (for the check of what is mapped).
pub fn opened() -> Vec<PathBuf> {
    opened_list().lock().map(|v| v.clone()).unwrap_or_default()
}

/// Marks a library's load error as a file the loader cannot take (cut short, not a library, or
/// refused): `need` gives such rows `LIBRARY_UNLOADABLE`.
pub const UNLOADABLE: &str = " cannot be loaded: ";

/// Opens the first of `names` present in the chosen tree, by absolute path: never through the
/// dynamic loader's own search, which could take it from another tree. The error says which
/// tree was searched for which names.
pub fn open(names: &[&str]) -> Result<Loaded, String> {
    let choice = choice().as_ref().map_err(|e| e.clone())?;
    let tree = &choice.found.tree;
    let Some(path) = tree.find(names) else {
        return Err(format!(
            "not found in the ROCm tree {}; looked for {}",
            tree.label(),
            tree.looked_for(names)
        ));
    };
    // A truncated file would be mapped past its end and kill the process with SIGBUS at the
    // first touch, naming nothing (issue 40, D5): its segments are checked first.
    crate::rocm_tree::elf::check_loadable(&path)
        .map_err(|why| format!("{}{UNLOADABLE}{why}", path.display()))?;
    // SAFETY: loading a ROCm library runs its initialisers; these are the vendor's (or the
    // test fake's) libraries, loaded deliberately. A worker process is expendable if one
    // misbehaves.
    match unsafe { libloading::Library::new(&path) } {
        Ok(lib) => {
            if let Ok(mut v) = opened_list().lock() {
                v.push(path.clone());
            }
            Ok(Loaded {
                lib: Arc::new(lib),
                path: path.display().to_string(),
            })
        }
        Err(e) => Err(format!("{}{UNLOADABLE}{}", path.display(), dl_reason(&e))),
    }
}

/// The loader's own reason (dlerror's text) from libloading's error.
fn dl_reason(e: &libloading::Error) -> String {
    match e {
        libloading::Error::DlOpen { source } => source.to_string(),
        other => {
            let text = other.to_string();
            if text.is_empty() {
                "the dynamic loader refused it and gave no reason".into()
            } else {
                text
            }
        }
    }
}

/// A version packed as major*10000000 + minor*100000 + patch (HIP's encoding).
pub fn hip_version(v: i32) -> (i32, i32, i32) {
    (v / 10_000_000, (v / 100_000) % 100, v % 100_000)
}

/// An object a ROCm library made (a handle, descriptor, stream or generator), destroyed once
/// with the library's own call; it keeps the library (`L`) loaded while it lives.
pub struct Owned<L> {
    pub lib: Arc<L>,
    pub raw: Ptr,
    destroy: unsafe extern "C" fn(Ptr) -> c_int,
}

impl<L> Owned<L> {
    /// The object `create` writes through its out-pointer, its status passed by `check` (the
    /// library's), destroyed by `destroy`.
    pub fn make(
        lib: &Arc<L>,
        create: impl FnOnce(*mut Ptr) -> c_int,
        check: impl FnOnce(c_int) -> Result<(), UnitError>,
        destroy: unsafe extern "C" fn(Ptr) -> c_int,
    ) -> Result<Owned<L>, UnitError> {
        let mut raw = std::ptr::null_mut();
        check(create(&mut raw))?;
        Ok(Owned {
            lib: lib.clone(),
            raw,
            destroy,
        })
    }
}

impl<L> Drop for Owned<L> {
    fn drop(&mut self) {
        // SAFETY: made by the library's create call, destroyed once, here.
        unsafe { (self.destroy)(self.raw) };
    }
}

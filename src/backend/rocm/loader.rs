//! Finding and opening ROCm's shared libraries at run time, and the `api!` macro that declares a
//! library's table of raw symbols. Nothing here is linked at build time: one binary serves ROCm
//! 5.7, 6.x and 7.x, and builds on a machine with no ROCm at all.

use crate::rocm_tree::discover::{self, Choice};
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
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Declares a struct holding a library's raw entry points, resolved once at load time.
/// `required` symbols must all be present; `optional` ones are `None` where missing (they
/// differ between ROCm releases).
macro_rules! api {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            required { $( $f:ident : fn($($a:ty),* $(,)?) -> $r:ty; )* }
            optional { $( $o:ident : fn($($oa:ty),* $(,)?) -> $or:ty; )* }
        }
    ) => {
        $(#[$meta])*
        #[allow(non_snake_case, clippy::type_complexity)]
        pub struct $name {
            pub _lib: std::sync::Arc<libloading::Library>,
            $( pub $f: unsafe extern "C" fn($($a),*) -> $r, )*
            $( pub $o: Option<unsafe extern "C" fn($($oa),*) -> $or>, )*
        }

        impl $name {
            /// Resolves every symbol; names the first required one that is missing.
            pub fn load(lib: std::sync::Arc<libloading::Library>) -> Result<$name, String> {
                // SAFETY: each symbol is declared with the signature of the C headers (see
                // ../shared/ROCM-ABI.md); the Library is kept alive by the struct.
                unsafe {
                    Ok($name {
                        $( $f: *lib
                            .get::<unsafe extern "C" fn($($a),*) -> $r>(
                                concat!(stringify!($f), "\0").as_bytes(),
                            )
                            .map_err(|_| format!("symbol {} is missing", stringify!($f)))?, )*
                        $( $o: lib
                            .get::<unsafe extern "C" fn($($oa),*) -> $or>(
                                concat!(stringify!($o), "\0").as_bytes(),
                            )
                            .ok()
                            .map(|s| *s), )*
                        _lib: lib,
                    })
                }
            }
        }
    };
}

pub(crate) use api;

/// A C string returned by a library (error names, version strings), or a placeholder.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that stays valid during the call (what the
/// libraries' error-name and version calls return). For a buffer the caller filled, use
/// [`c_str_in`], which cannot read past it.
pub(crate) unsafe fn c_str(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        return "(null)".into();
    }
    // SAFETY: the caller's contract above.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

/// The string a library wrote into `buf`: up to its first NUL, and never past the buffer's end
/// (a library that filled it without a terminator gives the whole buffer).
pub(crate) fn c_str_in(buf: &[std::ffi::c_char]) -> String {
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    let bytes: Vec<u8> = buf[..end].iter().map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A version packed as major*10000000 + minor*100000 + patch (HIP's encoding).
pub fn hip_version(v: i32) -> (i32, i32, i32) {
    (v / 10_000_000, (v / 100_000) % 100, v % 100_000)
}

#[cfg(test)]
mod tests {
    use super::c_str_in;

    #[test]
    fn a_filled_buffer_is_read_up_to_its_nul_and_never_past_its_end() {
        let mut buf = [0 as std::ffi::c_char; 8];
        for (i, b) in b"gfx1030".iter().enumerate() {
            buf[i] = *b as std::ffi::c_char;
        }
        assert_eq!(c_str_in(&buf), "gfx1030");
        let full = [b'x' as std::ffi::c_char; 4];
        assert_eq!(
            c_str_in(&full),
            "xxxx",
            "no terminator: the whole buffer, nothing more"
        );
    }
}

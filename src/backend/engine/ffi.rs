//! What both backends need to call a C library opened at run time (the ROCm libraries, NVML):
//! the `api!` macro that declares a library's table of raw symbols, and the strings such
//! libraries hand back or write into buffers.

/// Declares a struct holding a library's raw entry points, resolved once at load time.
/// `required` symbols must all be present; `optional` ones are `None` where missing (they
/// differ between releases).
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
                // SAFETY: each symbol is declared with the signature of its library's C header
                // (ROCm's: ../shared/ROCM-ABI.md); the Library is kept alive by the struct.
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

//! hipRTC: compiles the kernels in kernels/ for the device at run time. On ROCm 5.x and 6.x its
//! symbols also live inside libamdhip64; from 7.0 only in libhiprtc.so.7.

use super::hip::Hip;
use super::loader;
use crate::backend::UnitError;
use crate::backend::engine::ffi::{api, c_str};
use std::ffi::{CString, c_char, c_int, c_void};

pub const SONAMES: &[&str] = &[
    "libhiprtc.so.7",
    "libhiprtc.so.6",
    "libhiprtc.so.5",
    "libhiprtc.so",
];

type Prog = *mut c_void;

api! {
    pub struct HiprtcApi {
        required {
            hiprtcCreateProgram: fn(
                *mut Prog, *const c_char, *const c_char, c_int, *const *const c_char,
                *const *const c_char,
            ) -> c_int;
            hiprtcCompileProgram: fn(Prog, c_int, *const *const c_char) -> c_int;
            hiprtcGetCodeSize: fn(Prog, *mut usize) -> c_int;
            hiprtcGetCode: fn(Prog, *mut c_char) -> c_int;
            hiprtcGetProgramLogSize: fn(Prog, *mut usize) -> c_int;
            hiprtcGetProgramLog: fn(Prog, *mut c_char) -> c_int;
            hiprtcDestroyProgram: fn(*mut Prog) -> c_int;
            hiprtcGetErrorString: fn(c_int) -> *const c_char;
        }
        optional {
            hiprtcVersion: fn(*mut c_int, *mut c_int) -> c_int;
        }
    }
}

pub struct Hiprtc {
    pub api: HiprtcApi,
    pub path: String,
}

impl Hiprtc {
    /// Inside libamdhip64 first on ROCm < 7 (where it is always there), else libhiprtc.
    pub fn load(hip: &Hip) -> Result<Hiprtc, String> {
        if hip.version.0 < 7
            && let Ok(api) = HiprtcApi::load(hip.api._lib.clone())
        {
            return Ok(Hiprtc {
                api,
                path: format!("{} (built in)", hip.path),
            });
        }
        let l = loader::open(SONAMES).map_err(|e| format!("hipRTC (libhiprtc) {e}"))?;
        let api = HiprtcApi::load(l.lib).map_err(|e| format!("{}: {e}", l.path))?;
        Ok(Hiprtc { api, path: l.path })
    }

    pub fn version(&self) -> Option<String> {
        let f = self.api.hiprtcVersion?;
        let (mut a, mut b) = (0, 0);
        // SAFETY: out-pointers to live ints.
        (unsafe { f(&mut a, &mut b) } == 0).then(|| format!("{a}.{b}"))
    }

    fn err(&self, rc: c_int, what: &str, log: String) -> UnitError {
        // SAFETY: hiprtcGetErrorString returns a static NUL-terminated string for any code.
        let name = unsafe { c_str((self.api.hiprtcGetErrorString)(rc)) };
        let message = if log.is_empty() {
            what.to_string()
        } else {
            format!("{what}: {log}")
        };
        UnitError::library("hiprtc", name, message)
    }

    /// Compiles one source for `arch` (e.g. "gfx1030"; empty = the current device) into a code
    /// object for hipModuleLoadData.
    pub fn compile(&self, source: &str, name: &str, arch: &str) -> Result<Vec<u8>, UnitError> {
        let bad = |what: &str| {
            let message = format!("{what} contains a NUL byte");
            UnitError::library("hiprtc", "HIPRTC_ERROR_INVALID_INPUT", message)
        };
        let src = CString::new(source).map_err(|_| bad("the kernel source"))?;
        let cname = CString::new(name).map_err(|_| bad("the program name"))?;
        let mut prog: Prog = std::ptr::null_mut();
        // SAFETY: NUL-terminated strings that outlive the call; no headers.
        let rc = unsafe {
            (self.api.hiprtcCreateProgram)(
                &mut prog,
                src.as_ptr(),
                cname.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(self.err(rc, "hiprtcCreateProgram", String::new()));
        }
        let result = self.compile_program(prog, arch);
        // SAFETY: created above, destroyed once.
        unsafe { (self.api.hiprtcDestroyProgram)(&mut prog) };
        result
    }

    fn compile_program(&self, prog: Prog, arch: &str) -> Result<Vec<u8>, UnitError> {
        let mut opts = vec![CString::new("-std=c++17").unwrap_or_default()];
        if !arch.is_empty()
            && let Ok(a) = CString::new(format!("--offload-arch={arch}"))
        {
            opts.push(a);
        }
        let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        // SAFETY: a live program and option strings that outlive the call.
        let rc =
            unsafe { (self.api.hiprtcCompileProgram)(prog, ptrs.len() as c_int, ptrs.as_ptr()) };
        if rc != 0 {
            let log = self.log(prog);
            return Err(self.err(rc, "hiprtcCompileProgram", log));
        }
        let mut size = 0usize;
        // SAFETY: out-pointer to a live usize.
        let rc = unsafe { (self.api.hiprtcGetCodeSize)(prog, &mut size) };
        if rc != 0 {
            return Err(self.err(rc, "hiprtcGetCodeSize", String::new()));
        }
        let mut code = vec![0u8; size];
        // SAFETY: the buffer holds the size the library reported.
        let rc = unsafe { (self.api.hiprtcGetCode)(prog, code.as_mut_ptr().cast()) };
        if rc != 0 {
            return Err(self.err(rc, "hiprtcGetCode", String::new()));
        }
        Ok(code)
    }

    fn log(&self, prog: Prog) -> String {
        let mut size = 0usize;
        // SAFETY: out-pointer to a live usize.
        if unsafe { (self.api.hiprtcGetProgramLogSize)(prog, &mut size) } != 0 || size == 0 {
            return String::new();
        }
        let mut buf = vec![0u8; size + 1];
        // SAFETY: the buffer is one byte larger than the reported size.
        if unsafe { (self.api.hiprtcGetProgramLog)(prog, buf.as_mut_ptr().cast()) } != 0 {
            return String::new();
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        let text = String::from_utf8_lossy(&buf[..end]);
        // The first error says what went wrong (later ones often follow from it); compiler logs
        // can be long, so the rest is cut to its tail.
        let t = text.trim();
        let first = t.lines().find(|l| l.contains("error:")).unwrap_or("");
        let tail = match t.char_indices().rev().nth(1500) {
            Some((i, _)) => format!("...{}", &t[i..]),
            None => t.to_string(),
        };
        if first.is_empty() || tail.starts_with(first) {
            tail
        } else {
            format!("{}\n{tail}", first.trim())
        }
    }
}

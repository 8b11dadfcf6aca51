//! The HIP runtime (libamdhip64): raw symbols, calls that turn hipError_t into Results named by
//! the runtime itself, the stream, and the device's facts. What the engine does with them is in
//! backend::rocm::runtime (the engine's `Runtime` over HIP).

use super::loader::{self, Owned};
use crate::backend::UnitError;
use crate::backend::engine::ffi::{api, c_str, c_str_in};
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::Arc;

pub type Ptr = *mut c_void;

/// Sonames per ROCm major, newest first; the unversioned name last.
pub const SONAMES: &[&str] = &[
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
    "libamdhip64.so",
];

pub const MEMCPY_H2D: c_int = 1;
pub const MEMCPY_D2H: c_int = 2;
pub const MEMCPY_D2D: c_int = 3;
/// hipStreamCaptureModeThreadLocal: the capture rejects unsafe calls made by this thread only, so
/// another thread's hipEventQuery or synchronous call cannot invalidate it (and HIP 7.0, which
/// fails hipEventQuery during a global-mode capture, does not fail the libraries that poll).
pub const CAPTURE_MODE_THREAD_LOCAL: c_int = 1;
pub const ATTR_CLOCK_RATE: c_int = 5;
pub const ATTR_L2_CACHE_SIZE: c_int = 19;
pub const ATTR_MEMORY_BUS_WIDTH: c_int = 59;
pub const ATTR_MEMORY_CLOCK_RATE: c_int = 60;
pub const ATTR_MULTIPROCESSOR_COUNT: c_int = 63;
pub const ATTR_WARP_SIZE: c_int = 87;
pub const ERROR_NO_DEVICE: c_int = 100;

api! {
    pub struct HipApi {
        required {
            hipInit: fn(c_uint) -> c_int;
            hipGetDeviceCount: fn(*mut c_int) -> c_int;
            hipSetDevice: fn(c_int) -> c_int;
            hipDeviceSynchronize: fn() -> c_int;
            hipDeviceGetAttribute: fn(*mut c_int, c_int, c_int) -> c_int;
            hipDeviceGetName: fn(*mut c_char, c_int, c_int) -> c_int;
            hipRuntimeGetVersion: fn(*mut c_int) -> c_int;
            hipDriverGetVersion: fn(*mut c_int) -> c_int;
            hipMalloc: fn(*mut Ptr, usize) -> c_int;
            hipFree: fn(Ptr) -> c_int;
            hipHostMalloc: fn(*mut Ptr, usize, c_uint) -> c_int;
            hipHostFree: fn(Ptr) -> c_int;
            hipMemcpy: fn(Ptr, *const c_void, usize, c_int) -> c_int;
            hipMemcpyAsync: fn(Ptr, *const c_void, usize, c_int, Ptr) -> c_int;
            hipMemsetAsync: fn(Ptr, c_int, usize, Ptr) -> c_int;
            hipStreamCreate: fn(*mut Ptr) -> c_int;
            hipStreamDestroy: fn(Ptr) -> c_int;
            hipStreamSynchronize: fn(Ptr) -> c_int;
            hipEventCreate: fn(*mut Ptr) -> c_int;
            hipEventDestroy: fn(Ptr) -> c_int;
            hipEventRecord: fn(Ptr, Ptr) -> c_int;
            hipEventSynchronize: fn(Ptr) -> c_int;
            hipEventElapsedTime: fn(*mut f32, Ptr, Ptr) -> c_int;
            hipStreamBeginCapture: fn(Ptr, c_int) -> c_int;
            hipStreamEndCapture: fn(Ptr, *mut Ptr) -> c_int;
            hipGraphInstantiate: fn(*mut Ptr, Ptr, *mut Ptr, *mut c_char, usize) -> c_int;
            hipGraphLaunch: fn(Ptr, Ptr) -> c_int;
            hipGraphExecDestroy: fn(Ptr) -> c_int;
            hipGraphDestroy: fn(Ptr) -> c_int;
            hipGetErrorName: fn(c_int) -> *const c_char;
            hipGetErrorString: fn(c_int) -> *const c_char;
            hipModuleLoadData: fn(*mut Ptr, *const c_void) -> c_int;
            hipModuleGetFunction: fn(*mut Ptr, Ptr, *const c_char) -> c_int;
            hipModuleUnload: fn(Ptr) -> c_int;
            hipModuleLaunchKernel: fn(
                Ptr, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Ptr,
                *mut *mut c_void, *mut *mut c_void,
            ) -> c_int;
        }
        optional {
            // ROCm 6+ layout of hipDeviceProp_t (gcnArchName at 1160); 5.x has only the plain one.
            hipGetDevicePropertiesR0600: fn(*mut c_void, c_int) -> c_int;
            hipGetDeviceProperties: fn(*mut c_void, c_int) -> c_int;
            hipMemGetInfo: fn(*mut usize, *mut usize) -> c_int;
            hipHostGetDevicePointer: fn(*mut Ptr, Ptr, c_uint) -> c_int;
            hipDeviceGetPCIBusId: fn(*mut std::ffi::c_char, c_int, c_int) -> c_int;
            // Only CUDA's graph timing uploads a graph before its launch; kept for a runtime that may.
            hipGraphUpload: fn(Ptr, Ptr) -> c_int;
        }
    }
}

/// The loaded runtime, shared by every owning type below.
pub struct Hip {
    pub api: HipApi,
    pub path: String,
    /// (major, minor, patch) of hipRuntimeGetVersion; decides enum sets of other libraries.
    pub version: (i32, i32, i32),
}

pub type HipRef = Arc<Hip>;

impl Hip {
    pub fn load() -> Result<HipRef, String> {
        let l = loader::open(SONAMES).map_err(|e| format!("HIP runtime (libamdhip64) {e}"))?;
        let api = HipApi::load(l.lib).map_err(|e| format!("{}: {e}", l.path))?;
        let mut v = 0;
        // SAFETY: out-pointer to a live int.
        let rc = unsafe { (api.hipRuntimeGetVersion)(&mut v) };
        let version = if rc == 0 {
            loader::hip_version(v)
        } else {
            (0, 0, 0)
        };
        Ok(Arc::new(Hip {
            api,
            path: l.path,
            version,
        }))
    }

    /// hipError_t → Result, with the runtime's own name for the code.
    pub fn check(&self, rc: c_int, what: &str) -> Result<(), UnitError> {
        if rc == 0 {
            return Ok(());
        }
        // SAFETY: both return static strings for any code.
        let (name, text) = unsafe {
            (
                c_str((self.api.hipGetErrorName)(rc)),
                c_str((self.api.hipGetErrorString)(rc)),
            )
        };
        Err(UnitError::library("hip", name, format!("{what}: {text}")))
    }

    pub fn error_name(&self, rc: c_int) -> String {
        // SAFETY: hipGetErrorName returns a static NUL-terminated string for any code.
        unsafe { c_str((self.api.hipGetErrorName)(rc)) }
    }
}

/// The runtime's stream.
pub type Stream = Owned<Hip>;

impl Stream {
    pub fn new(hip: &HipRef) -> Result<Stream, UnitError> {
        let a = &hip.api;
        // SAFETY: out-pointer to a live handle.
        let create = |r| unsafe { (a.hipStreamCreate)(r) };
        Owned::make(
            hip,
            create,
            |rc| hip.check(rc, "hipStreamCreate"),
            a.hipStreamDestroy,
        )
    }

    pub fn sync(&self) -> Result<(), UnitError> {
        // SAFETY: a live stream.
        self.lib.check(
            unsafe { (self.lib.api.hipStreamSynchronize)(self.raw) },
            "hipStreamSynchronize",
        )
    }
}

/// Facts about device 0 for the manifest.
pub struct DeviceFacts {
    pub name: String,
    pub arch: String,
    pub attrs: Vec<(&'static str, String)>,
}

pub fn device_facts(hip: &Hip, dev: c_int) -> DeviceFacts {
    let mut name = [0 as c_char; 256];
    // SAFETY: buffer and its length.
    let name = if unsafe { (hip.api.hipDeviceGetName)(name.as_mut_ptr(), 255, dev) } == 0 {
        c_str_in(&name)
    } else {
        "unknown AMD device".into()
    };
    let arch = gcn_arch_name(hip, dev).unwrap_or_else(|| "unknown".into());
    let attr = |a| {
        let mut v = 0;
        // SAFETY: out-pointer to a live int.
        match unsafe { (hip.api.hipDeviceGetAttribute)(&mut v, a, dev) } {
            0 => v.to_string(),
            _ => "unknown".into(),
        }
    };
    let mhz = |a| {
        attr(a)
            .parse::<i64>()
            .map(|k| (k / 1000).to_string())
            .unwrap_or_else(|_| "unknown".into())
    };
    let mut attrs = vec![
        ("compute units", attr(ATTR_MULTIPROCESSOR_COUNT)),
        ("clock MHz", mhz(ATTR_CLOCK_RATE)),
        ("memory clock MHz", mhz(ATTR_MEMORY_CLOCK_RATE)),
        ("memory bus bits", attr(ATTR_MEMORY_BUS_WIDTH)),
        ("L2 bytes", attr(ATTR_L2_CACHE_SIZE)),
        ("warp size", attr(ATTR_WARP_SIZE)),
    ];
    if let Some(f) = hip.api.hipMemGetInfo {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: out-pointers to live integers.
        if unsafe { f(&mut free, &mut total) } == 0 {
            attrs.push((
                "memory",
                format!("{:.1} GiB", total as f64 / (1u64 << 30) as f64),
            ));
        }
    }
    DeviceFacts { name, arch, attrs }
}

/// gcnArchName ("gfx1010:xnack-") from whichever device-properties layout the runtime has
/// (see ROCM-ABI.md): the R0600 symbol with the string at 1160, else the old one at 396.
pub fn gcn_arch_name(hip: &Hip, dev: c_int) -> Option<String> {
    let (f, offset) = match (
        hip.api.hipGetDevicePropertiesR0600,
        hip.api.hipGetDeviceProperties,
    ) {
        (Some(f), _) => (f, 1160),
        (None, Some(f)) => (f, 396),
        (None, None) => return None,
    };
    // Larger than either struct, zeroed so that an unwritten string reads as empty.
    let mut buf = vec![0u8; 4096];
    // SAFETY: the buffer is larger than every known hipDeviceProp_t layout.
    if unsafe { f(buf.as_mut_ptr().cast(), dev) } != 0 {
        return None;
    }
    let bytes = &buf[offset..offset + 256];
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let s = String::from_utf8_lossy(&bytes[..end]).into_owned();
    s.starts_with("gfx").then_some(s)
}

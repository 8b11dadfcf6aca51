//! HIP runtime: initialisation, the device, versions, properties and error reporting.

use crate::model::{self, Model};
use std::cell::Cell;
use std::ffi::{c_char, c_void};

/// hipError_t values (the same in 5.7, 6.x and 7.x).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum E {
    InvalidValue = 1,
    OutOfMemory = 2,
    NotInitialized = 3,
    InvalidConfiguration = 9,
    InvalidDevice = 101,
    NoDevice = 100,
    InvalidImage = 200,
    InvalidHandle = 400,
    IllegalState = 401,
    NotFound = 500,
    IllegalAddress = 700,
    LaunchFailure = 719,
    NotSupported = 801,
    StreamCaptureUnsupported = 900,
    StreamCaptureInvalidated = 901,
    Unknown = 999,
}

const NAMES: &[(i32, &str, &str)] = &[
    (0, "hipSuccess", "no error"),
    (1, "hipErrorInvalidValue", "invalid argument"),
    (2, "hipErrorOutOfMemory", "out of memory"),
    (3, "hipErrorNotInitialized", "initialization error"),
    (
        9,
        "hipErrorInvalidConfiguration",
        "invalid configuration argument",
    ),
    (
        35,
        "hipErrorInsufficientDriver",
        "driver version is insufficient for runtime version",
    ),
    (
        98,
        "hipErrorInvalidDeviceFunction",
        "invalid device function",
    ),
    (
        100,
        "hipErrorNoDevice",
        "no ROCm-capable device is detected",
    ),
    (101, "hipErrorInvalidDevice", "invalid device ordinal"),
    (
        200,
        "hipErrorInvalidImage",
        "device kernel image is invalid",
    ),
    (
        209,
        "hipErrorNoBinaryForGpu",
        "no kernel image is available for execution on the device",
    ),
    (218, "hipErrorInvalidKernelFile", "invalid kernel file"),
    (
        303,
        "hipErrorSharedObjectInitFailed",
        "shared object initialization failed",
    ),
    (400, "hipErrorInvalidHandle", "invalid resource handle"),
    (
        401,
        "hipErrorIllegalState",
        "the operation cannot be performed in the present state",
    ),
    (500, "hipErrorNotFound", "named symbol not found"),
    (600, "hipErrorNotReady", "device not ready"),
    (
        700,
        "hipErrorIllegalAddress",
        "an illegal memory access was encountered",
    ),
    (
        701,
        "hipErrorLaunchOutOfResources",
        "too many resources requested for launch",
    ),
    (
        702,
        "hipErrorLaunchTimeOut",
        "the launch timed out and was terminated",
    ),
    (710, "hipErrorAssert", "device-side assert triggered"),
    (719, "hipErrorLaunchFailure", "unspecified launch failure"),
    (801, "hipErrorNotSupported", "operation not supported"),
    (
        900,
        "hipErrorStreamCaptureUnsupported",
        "operation not permitted when stream is capturing",
    ),
    (
        901,
        "hipErrorStreamCaptureInvalidated",
        "operation failed due to a previous error during capture",
    ),
    (999, "hipErrorUnknown", "unknown error"),
];

thread_local! {
    static LAST: Cell<i32> = const { Cell::new(0) };
    static CURRENT: Cell<i32> = const { Cell::new(0) };
}

/// The model, if it loaded and has a device.
pub fn ready() -> Result<&'static Model, i32> {
    let m = model::get().map_err(|_| E::NotInitialized as i32)?;
    if m.device.count == 0 {
        return Err(E::NoDevice as i32);
    }
    Ok(m)
}

fn remember(code: i32) -> i32 {
    if code != 0 {
        LAST.with(|l| l.set(code));
    }
    code
}

/// Every HIP export: no panic escapes, the model must be usable, failures are remembered for
/// hipGetLastError.
pub fn call(f: impl FnOnce() -> i32) -> i32 {
    remember(crate::guard(E::Unknown as i32, || match ready() {
        Ok(_) => f(),
        Err(e) => e,
    }))
}

/// For calls that work without a device (versions).
fn call_nodev(f: impl FnOnce(&Model) -> i32) -> i32 {
    remember(crate::guard(E::Unknown as i32, || match model::get() {
        Ok(m) => f(m),
        Err(_) => E::NotInitialized as i32,
    }))
}

fn valid_device(m: &Model, d: i32) -> bool {
    (0..m.device.count).contains(&d)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipInit(_flags: u32) -> i32 {
    call(|| 0)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDeviceCount(count: *mut i32) -> i32 {
    call_nodev(|m| {
        // SAFETY: null is checked by put.
        if !unsafe { crate::put(count, m.device.count) } {
            return E::InvalidValue as i32;
        }
        if m.device.count == 0 {
            E::NoDevice as i32
        } else {
            0
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipSetDevice(device: i32) -> i32 {
    call(|| match ready() {
        Ok(m) if valid_device(m, device) => {
            CURRENT.with(|c| c.set(device));
            0
        }
        _ => E::InvalidDevice as i32,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDevice(device: *mut i32) -> i32 {
    // SAFETY: null is checked by put.
    call(
        || match unsafe { crate::put(device, CURRENT.with(|c| c.get())) } {
            true => 0,
            false => E::InvalidValue as i32,
        },
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceSynchronize() -> i32 {
    call(|| {
        if crate::capture::blocks_sync() {
            E::StreamCaptureUnsupported as i32
        } else {
            0
        }
    })
}

/// (major, minor) from a gfx name: gfx1010 -> (10, 1), gfx90a -> (9, 0), gfx1151 -> (11, 5).
pub fn gfx_version(arch: &str) -> (i32, i32) {
    let digits = arch
        .strip_prefix("gfx")
        .unwrap_or(arch)
        .split(':')
        .next()
        .unwrap_or("");
    if digits.len() < 3 || !digits.is_ascii() {
        return (0, 0);
    }
    let (major, rest) = digits.split_at(digits.len() - 2);
    let minor = i32::from_str_radix(&rest[..1], 16).unwrap_or(0);
    (major.parse().unwrap_or(0), minor)
}

fn attribute(m: &Model, attr: i32) -> Option<i32> {
    let d = &m.device;
    let (major, minor) = gfx_version(&d.arch);
    Some(match attr {
        5 | 60 => d.clock_khz,
        19 => 4 << 20,
        23 => major,
        59 => 256,
        61 => minor,
        63 | 10015 => d.cus,
        74 => 64 << 10,
        // An int cannot hold more than 2 GiB; report the most it can.
        84 => (d.memory_gib << 30).min(i32::MAX as u64) as i32,
        87 => {
            if major >= 10 {
                32
            } else {
                64
            }
        }
        10017 => 100_000,
        _ => return None,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetAttribute(out: *mut i32, attr: i32, device: i32) -> i32 {
    call(|| {
        let Ok(m) = ready() else {
            return E::NotInitialized as i32;
        };
        if !valid_device(m, device) {
            return E::InvalidDevice as i32;
        }
        match attribute(m, attr) {
            // SAFETY: null is checked by put.
            Some(v) if unsafe { crate::put(out, v) } => 0,
            _ => E::InvalidValue as i32,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetName(name: *mut c_char, len: i32, device: i32) -> i32 {
    call(|| {
        let Ok(m) = ready() else {
            return E::NotInitialized as i32;
        };
        if !valid_device(m, device) {
            return E::InvalidDevice as i32;
        }
        // SAFETY: the caller's buffer holds `len` bytes.
        match len > 0 && unsafe { crate::write_text(name, len as usize, &m.device.name) } {
            true => 0,
            false => E::InvalidValue as i32,
        }
    })
}

fn hip_version(m: &Model) -> i32 {
    let v = m.versions.hip;
    (v.major * 10_000_000 + v.minor * 100_000 + v.patch) as i32
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipRuntimeGetVersion(version: *mut i32) -> i32 {
    // SAFETY: null is checked by put.
    call_nodev(|m| match unsafe { crate::put(version, hip_version(m)) } {
        true => 0,
        false => E::InvalidValue as i32,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDriverGetVersion(version: *mut i32) -> i32 {
    // SAFETY: as hipRuntimeGetVersion.
    unsafe { hipRuntimeGetVersion(version) }
}

/// Fills a properties struct: name at 0, totalGlobalMem at `mem_at`, gcnArchName at `arch_at`.
unsafe fn properties(
    props: *mut c_void,
    device: i32,
    size: usize,
    mem_at: usize,
    arch_at: usize,
) -> i32 {
    call(|| {
        let Ok(m) = ready() else {
            return E::NotInitialized as i32;
        };
        if props.is_null() {
            return E::InvalidValue as i32;
        }
        if !valid_device(m, device) {
            return E::InvalidDevice as i32;
        }
        let p = props.cast::<u8>();
        // SAFETY: the caller passes a struct of the size this symbol's ROCm release defines.
        unsafe {
            std::ptr::write_bytes(p, 0, size);
            crate::write_text(p.cast(), 256, &m.device.name);
            crate::put(p.add(mem_at).cast::<u64>(), m.device.memory_gib << 30);
            crate::write_text(p.add(arch_at).cast(), 256, &m.device.arch);
        }
        0
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDevicePropertiesR0600(props: *mut c_void, device: i32) -> i32 {
    // SAFETY: ROCm 6 layout: 1472 bytes, totalGlobalMem at 288, gcnArchName at 1160.
    unsafe { properties(props, device, 1472, 288, 1160) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDeviceProperties(props: *mut c_void, device: i32) -> i32 {
    // SAFETY: ROCm 5 layout: 792 bytes, totalGlobalMem at 256, gcnArchName at 396.
    unsafe { properties(props, device, 792, 256, 396) }
}

fn entry(code: i32) -> Option<&'static (i32, &'static str, &'static str)> {
    NAMES.iter().find(|(c, _, _)| *c == code)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetErrorName(code: i32) -> *const c_char {
    crate::guard_str(|| match entry(code) {
        Some((_, name, _)) => crate::leak(name.to_string()),
        None => c"hipErrorUnknown".as_ptr(),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetErrorString(code: i32) -> *const c_char {
    crate::guard_str(|| {
        let base = entry(code).map_or("unknown error", |(_, _, s)| s);
        match model::problem() {
            Some(p) if code == E::NotInitialized as i32 => crate::leak(format!("{base}: {p}")),
            _ => crate::leak(base.to_string()),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetLastError() -> i32 {
    crate::guard(E::Unknown as i32, || LAST.with(|l| l.replace(0)))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipPeekAtLastError() -> i32 {
    crate::guard(E::Unknown as i32, || LAST.with(|l| l.get()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx_versions() {
        assert_eq!(gfx_version("gfx1010:xnack-"), (10, 1));
        assert_eq!(gfx_version("gfx1151"), (11, 5));
        assert_eq!(gfx_version("gfx90a:sramecc+:xnack-"), (9, 0));
        assert_eq!(gfx_version("bogus"), (0, 0));
    }
}

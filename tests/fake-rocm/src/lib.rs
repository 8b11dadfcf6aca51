//! fake-rocm: a CPU stand-in for the ROCm libraries rocsweep loads at run time (HIP, hipRTC,
//! MIOpen, hipBLASLt, rocBLAS, hipRAND), so the ROCm backend can be tested on machines with no AMD
//! GPU. One cdylib exports every symbol; tests symlink it under each library's name. "Device
//! memory" is host memory and every operation runs synchronously on the calling thread, except
//! that operations issued on a capturing stream are recorded and replayed by graph launches.
//! A fault model (TOML, path in FAKE_ROCM_MODEL) describes the device, the library versions and
//! the failures to reproduce (hangs, crashes, zeros, unsupported shapes): see README.md.
//!
//! No panic may cross the C boundary: every export runs inside `guard`, which turns a panic into
//! the library's error status.

// The exports implement C signatures fixed by the ROCm headers; their safety contract is the C one.
#![allow(clippy::missing_safety_doc, clippy::too_many_arguments)]

mod capture;
mod conv;
#[cfg(test)]
mod e2e_tests;
mod elem;
mod faults;
mod find_db;
mod gemm;
mod hip;
mod hipblaslt;
mod hiprand;
mod hiprtc;
mod kernels;
mod memory;
mod miopen;
mod miopen_conv;
mod miopen_exports;
mod model;
mod overrides;
mod rocblas;
mod rocblas_gemm;
mod rtc_source;

use std::collections::BTreeMap;
use std::ffi::{CStr, CString, c_char};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Runs an export's body, turning a panic into `err` (a panic must never unwind into C).
pub(crate) fn guard(err: i32, f: impl FnOnce() -> i32) -> i32 {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(err)
}

/// The same for exports that return a C string.
pub(crate) fn guard_str(f: impl FnOnce() -> *const c_char) -> *const c_char {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or(c"fake-rocm: internal error".as_ptr())
}

/// Writes `v` through a caller's out-pointer; false when the pointer is null.
pub(crate) unsafe fn put<T>(p: *mut T, v: T) -> bool {
    if p.is_null() {
        return false;
    }
    // SAFETY: the caller passes a pointer to writable storage for a T (the C contract).
    unsafe { p.write_unaligned(v) };
    true
}

/// Reads a value the caller points to; None when the pointer is null.
pub(crate) unsafe fn get<T: Copy>(p: *const T) -> Option<T> {
    if p.is_null() {
        None
    } else {
        // SAFETY: the caller passes a pointer to a readable T (the C contract).
        Some(unsafe { p.read_unaligned() })
    }
}

/// A caller's NUL-terminated string, lossily decoded; None when null.
pub(crate) unsafe fn text(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        // SAFETY: the caller passes a NUL-terminated string (the C contract).
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

/// Copies `s` into a caller's buffer of `cap` bytes, truncated and always NUL-terminated.
pub(crate) unsafe fn write_text(dst: *mut c_char, cap: usize, s: &str) -> bool {
    if dst.is_null() || cap == 0 {
        return false;
    }
    let n = s.len().min(cap - 1);
    // SAFETY: the caller's buffer holds `cap` bytes and n < cap.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), dst.cast::<u8>(), n);
        *dst.add(n) = 0;
    }
    true
}

/// A C string that lives for the rest of the process. Interned, so repeated messages (one per
/// status code or per model error) are allocated once.
pub(crate) fn leak(s: String) -> *const c_char {
    static TABLE: OnceLock<Mutex<BTreeMap<String, &'static CStr>>> = OnceLock::new();
    let table = TABLE.get_or_init(|| Mutex::new(BTreeMap::new()));
    let mut t = table.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = t.get(&s) {
        return c.as_ptr();
    }
    let c: &'static CStr = Box::leak(
        CString::new(s.replace('\0', " "))
            .unwrap_or_default()
            .into_boxed_c_str(),
    );
    t.insert(s, c);
    c.as_ptr()
}

static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(1);

/// Opaque handles handed to C are small fake addresses looked up here, never dereferenced, so a
/// stale or foreign handle is an error status rather than a crash.
pub(crate) struct Registry<T> {
    map: Mutex<BTreeMap<usize, T>>,
}

impl<T> Registry<T> {
    pub const fn new() -> Self {
        Registry {
            map: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<usize, T>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn insert(&self, v: T) -> usize {
        let h = 0x0fa4_e000_0000 + NEXT_HANDLE.fetch_add(1, Ordering::Relaxed) * 16;
        self.lock().insert(h, v);
        h
    }

    pub fn remove(&self, h: usize) -> Option<T> {
        self.lock().remove(&h)
    }

    pub fn contains(&self, h: usize) -> bool {
        self.lock().contains_key(&h)
    }

    pub fn with<R>(&self, h: usize, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        self.lock().get_mut(&h).map(f)
    }

    pub fn for_each(&self, mut f: impl FnMut(&mut T)) {
        self.lock().values_mut().for_each(&mut f)
    }
}

impl<T: Clone> Registry<T> {
    pub fn get(&self, h: usize) -> Option<T> {
        self.lock().get(&h).cloned()
    }
}

/// Registers `v` and writes its handle through a caller's out-pointer; false when that is null.
pub(crate) unsafe fn create<T>(reg: &Registry<T>, out: *mut *mut std::ffi::c_void, v: T) -> bool {
    if out.is_null() {
        return false;
    }
    let h = reg.insert(v);
    // SAFETY: checked non-null above; the caller passes storage for one handle.
    unsafe { put(out, h as *mut std::ffi::c_void) }
}

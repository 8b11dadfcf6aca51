//! "Device" and pinned host memory (both plain host allocations, tracked so sizes, pinned-ness and
//! out-of-range accesses are known), copies and memsets.

use crate::capture::{self, Op};
use crate::faults::{self, Action, Lib, V};
use crate::hip::{self, E};
use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

const ALIGN: usize = 256;

struct Alloc {
    size: usize,
    pinned: bool,
}

struct Heap {
    allocs: BTreeMap<usize, Alloc>,
    device_bytes: u64,
}

static HEAP: Mutex<Heap> = Mutex::new(Heap {
    allocs: BTreeMap::new(),
    device_bytes: 0,
});

fn heap() -> MutexGuard<'static, Heap> {
    HEAP.lock().unwrap_or_else(|e| e.into_inner())
}

/// The allocation holding `addr`: (base, size, pinned).
fn containing(addr: usize) -> Option<(usize, usize, bool)> {
    let h = heap();
    let (base, a) = h.allocs.range(..=addr).next_back()?;
    (addr < base + a.size.max(1)).then_some((*base, a.size, a.pinned))
}

/// Whether `bytes` bytes at `addr` lie inside one tracked allocation (device or pinned).
pub fn check(addr: usize, bytes: usize) -> bool {
    if bytes == 0 {
        return true;
    }
    match containing(addr) {
        Some((base, size, _)) => addr
            .checked_add(bytes)
            .is_some_and(|end| end <= base + size),
        None => false,
    }
}

pub fn is_pinned(addr: usize) -> bool {
    containing(addr).is_some_and(|(_, _, p)| p)
}

fn is_device(addr: usize) -> bool {
    containing(addr).is_some_and(|(_, _, p)| !p)
}

pub fn total_bytes() -> u64 {
    crate::model::get().map_or(0, |m| m.device.memory_gib << 30)
}

unsafe fn allocate(out: *mut *mut c_void, size: usize, pinned: bool) -> i32 {
    if out.is_null() {
        return E::InvalidValue as i32;
    }
    if size == 0 {
        // SAFETY: out is non-null.
        unsafe { crate::put(out, std::ptr::null_mut()) };
        return 0;
    }
    let mut h = heap();
    if !pinned && h.device_bytes.saturating_add(size as u64) > total_bytes() {
        return E::OutOfMemory as i32;
    }
    let Ok(layout) = Layout::from_size_align(size, ALIGN) else {
        return E::OutOfMemory as i32;
    };
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return E::OutOfMemory as i32;
    }
    h.allocs.insert(p as usize, Alloc { size, pinned });
    if !pinned {
        h.device_bytes += size as u64;
    }
    // SAFETY: out is non-null.
    unsafe { crate::put(out, p.cast()) };
    0
}

fn release(p: *mut c_void, pinned: bool) -> i32 {
    if p.is_null() {
        return 0;
    }
    let mut h = heap();
    match h.allocs.get(&(p as usize)) {
        Some(a) if a.pinned == pinned => {}
        _ => return E::InvalidValue as i32,
    }
    let Some(a) = h.allocs.remove(&(p as usize)) else {
        return E::InvalidValue as i32;
    };
    if !pinned {
        h.device_bytes -= a.size as u64;
    }
    // SAFETY: allocated by `allocate` with this size and alignment, removed from the table once.
    unsafe { std::alloc::dealloc(p.cast(), Layout::from_size_align_unchecked(a.size, ALIGN)) };
    0
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMalloc(ptr: *mut *mut c_void, size: usize) -> i32 {
    hip::call(|| unsafe { allocate(ptr, size, false) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFree(ptr: *mut c_void) -> i32 {
    hip::call(|| release(ptr, false))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipHostMalloc(ptr: *mut *mut c_void, size: usize, _flags: u32) -> i32 {
    hip::call(|| unsafe { allocate(ptr, size, true) })
}

/// The device's address of mapped host memory: the fake's device shares the host's address space,
/// so it is the host address itself, for an allocation hipHostMalloc made.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipHostGetDevicePointer(
    dev: *mut *mut c_void,
    host: *mut c_void,
    flags: u32,
) -> i32 {
    hip::call(|| {
        if dev.is_null() || flags != 0 || !check(host as usize, 1) {
            return E::InvalidValue as i32;
        }
        // SAFETY: checked non-null.
        unsafe { crate::put(dev, host) };
        0
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipHostFree(ptr: *mut c_void) -> i32 {
    hip::call(|| release(ptr, true))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemGetInfo(free: *mut usize, total: *mut usize) -> i32 {
    hip::call(|| {
        if free.is_null() || total.is_null() {
            return E::InvalidValue as i32;
        }
        let t = total_bytes();
        let used = heap().device_bytes;
        // SAFETY: both checked non-null.
        unsafe {
            crate::put(free, t.saturating_sub(used) as usize);
            crate::put(total, t as usize);
        }
        0
    })
}

/// Direction and pinned-ness of a copy, from its kind (or, for Default, from the pointers).
fn classify(dst: usize, src: usize, bytes: usize, kind: i32) -> Result<(&'static str, bool), i32> {
    let kind = match kind {
        0 => "h2h",
        1 => "h2d",
        2 => "d2h",
        3 => "d2d",
        4 => match (is_device(src), is_device(dst)) {
            (false, false) => "h2h",
            (false, true) => "h2d",
            (true, false) => "d2h",
            (true, true) => "d2d",
        },
        _ => return Err(E::InvalidValue as i32),
    };
    if bytes > 0 && (dst == 0 || src == 0) {
        return Err(E::InvalidValue as i32);
    }
    let (dev_src, dev_dst) = match kind {
        "h2d" => (false, true),
        "d2h" => (true, false),
        "d2d" => (true, true),
        _ => (false, false),
    };
    if (dev_src && !check(src, bytes)) || (dev_dst && !check(dst, bytes)) {
        return Err(E::InvalidValue as i32);
    }
    let pinned = match kind {
        "h2d" | "h2h" => is_pinned(src),
        "d2h" => is_pinned(dst),
        _ => false,
    };
    Ok((kind, pinned))
}

/// A validated copy as an operation (run now or recorded into a graph).
fn copy_op(dst: usize, src: usize, bytes: usize, kind: i32) -> Result<Op, i32> {
    let (k, pinned) = classify(dst, src, bytes, kind)?;
    let keys = [
        ("kind", V::S(k)),
        ("bytes", V::N(bytes as i64)),
        ("pinned", V::S(if pinned { "true" } else { "false" })),
    ];
    let action = faults::check(Lib::Memcpy, None, &keys, |_| true);
    match action {
        Some(Action::Error) => return Err(E::Unknown as i32),
        Some(Action::NotSupported) => return Err(E::NotSupported as i32),
        _ => {}
    }
    Ok(Arc::new(move || {
        if let Some(a) = action {
            faults::trap(a);
        }
        // A graph may replay this after the buffers were freed: check again.
        if classify(dst, src, bytes, kind).is_err() {
            return E::IllegalAddress as i32;
        }
        // SAFETY: ranges validated by classify (device sides) or owned by the caller (host sides).
        unsafe {
            match action {
                Some(Action::Zeros) => std::ptr::write_bytes(dst as *mut u8, 0, bytes),
                Some(Action::Nan) => fill_nan(dst, bytes),
                _ => std::ptr::copy(src as *const u8, dst as *mut u8, bytes),
            }
        }
        0
    }))
}

/// Quiet-NaN f32 words over the range (a trailing partial word gets 0xff bytes).
unsafe fn fill_nan(dst: usize, bytes: usize) {
    let nan = f32::NAN.to_ne_bytes();
    for i in 0..bytes {
        // SAFETY: i < bytes, inside the caller's range.
        unsafe {
            *(dst as *mut u8).add(i) = if bytes - i / 4 * 4 >= 4 {
                nan[i % 4]
            } else {
                0xff
            }
        };
    }
}

fn memset_op(dst: usize, value: i32, bytes: usize) -> Result<Op, i32> {
    if !check(dst, bytes) {
        return Err(E::InvalidValue as i32);
    }
    Ok(Arc::new(move || {
        if !check(dst, bytes) {
            return E::IllegalAddress as i32;
        }
        // SAFETY: validated just above.
        unsafe { std::ptr::write_bytes(dst as *mut u8, value as u8, bytes) };
        0
    }))
}

/// A synchronous call while a strict capture is active is an error that ends the capture.
fn sync_call(op: Result<Op, i32>) -> i32 {
    if capture::blocks_sync() {
        return E::StreamCaptureUnsupported as i32;
    }
    match op {
        Ok(op) => op(),
        Err(e) => e,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpy(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    kind: i32,
) -> i32 {
    hip::call(|| sync_call(copy_op(dst as usize, src as usize, n, kind)))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyAsync(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    kind: i32,
    stream: *mut c_void,
) -> i32 {
    hip::call(|| match copy_op(dst as usize, src as usize, n, kind) {
        Ok(op) => capture::submit_hip(stream as usize, op),
        Err(e) => e,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemset(dst: *mut c_void, value: i32, n: usize) -> i32 {
    hip::call(|| sync_call(memset_op(dst as usize, value, n)))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemsetAsync(
    dst: *mut c_void,
    value: i32,
    n: usize,
    stream: *mut c_void,
) -> i32 {
    hip::call(|| match memset_op(dst as usize, value, n) {
        Ok(op) => capture::submit_hip(stream as usize, op),
        Err(e) => e,
    })
}

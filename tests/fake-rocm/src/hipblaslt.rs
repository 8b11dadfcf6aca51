//! hipBLASLt: descriptors, layouts, heuristics and Matmul. The type enums and layout attributes
//! follow the ROCm major version of the model (hipDataType / hipblasComputeType_t from ROCm 6,
//! hipblasDatatype_t / hipblasLtComputeType_t in 5.x); a value of the other release is
//! HIPBLAS_STATUS_INVALID_VALUE, which is how a version mismatch shows on real systems.

use crate::Registry;
use crate::capture;
use crate::elem::{self, DType};
use crate::faults::{self, Action, Lib, V};
use crate::gemm::{Gemm, Mat};
use crate::model::{self, Model};
use crate::overrides;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

const SUCCESS: i32 = 0;
const NOT_INITIALIZED: i32 = 1;
const INVALID_VALUE: i32 = 3;
const EXECUTION_FAILED: i32 = 5;
const INTERNAL_ERROR: i32 = 6;
const NOT_SUPPORTED: i32 = 7;

const ALGO_BASE: i32 = 1000;
const ALGO_WORKSPACE: u64 = 1 << 20;

#[derive(Clone, Copy)]
struct Desc {
    scale: DType,
    trans_a: bool,
    trans_b: bool,
}

#[derive(Clone, Copy)]
struct Layout {
    dt: DType,
    rows: usize,
    cols: usize,
    ld: usize,
    batch: usize,
    stride: usize,
}

static HANDLES: Registry<()> = Registry::new();
static DESCS: Registry<Desc> = Registry::new();
static LAYOUTS: Registry<Layout> = Registry::new();
static PREFS: Registry<u64> = Registry::new();

fn call(f: impl FnOnce(&'static Model) -> i32) -> i32 {
    crate::guard(INTERNAL_ERROR, || match model::get() {
        Ok(m) if m.device.count > 0 => f(m),
        _ => NOT_INITIALIZED,
    })
}

fn ok_or(b: bool, err: i32) -> i32 {
    if b { SUCCESS } else { err }
}

fn data_type(m: &Model, v: i32) -> Option<DType> {
    match (m.hipblaslt_hipdatatype(), v) {
        (true, 0) | (false, 151) => Some(DType::F32),
        (true, 2) | (false, 150) => Some(DType::F16),
        (true, 14) | (false, 168) => Some(DType::Bf16),
        _ => None,
    }
}

/// Compute types rocblaslt accepts: 32F and its fast variants (16F, the plain half compute type,
/// is refused with INVALID_VALUE, as rocblaslt_matmul_desc_create does).
fn compute_type_known(m: &Model, v: i32) -> bool {
    if m.hipblaslt_hipdatatype() {
        matches!(v, 2 | 4 | 5 | 6)
    } else {
        matches!(v, 300 | 301)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtCreate(handle: *mut *mut c_void) -> i32 {
    // SAFETY: null is checked by create.
    call(|_| {
        ok_or(
            unsafe { crate::create(&HANDLES, handle, ()) },
            INVALID_VALUE,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtDestroy(handle: *mut c_void) -> i32 {
    call(|_| ok_or(HANDLES.remove(handle as usize).is_some(), NOT_INITIALIZED))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtGetVersion(handle: *mut c_void, version: *mut i32) -> i32 {
    call(|m| {
        if !HANDLES.contains(handle as usize) {
            return NOT_INITIALIZED;
        }
        let v = m.versions.hipblaslt;
        // SAFETY: null is checked by put.
        ok_or(
            unsafe {
                crate::put(
                    version,
                    (v.major * 100_000 + v.minor * 100 + v.patch) as i32,
                )
            },
            INVALID_VALUE,
        )
    })
}

/// The library's git revision (hipBLASLt's HIPBLASLT_VERSION_TWEAK), copied as strcpy does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtGetGitRevision(handle: *mut c_void, rev: *mut c_char) -> i32 {
    call(|m| {
        if !HANDLES.contains(handle as usize) {
            return NOT_INITIALIZED;
        }
        let git = &m.versions.hipblaslt_git;
        // SAFETY: the caller's buffer holds the revision (hipBLASLt's contract, as strcpy).
        ok_or(
            unsafe { crate::write_text(rev, git.len() + 1, git) },
            INVALID_VALUE,
        )
    })
}

fn type_name(dt: DType) -> &'static str {
    match dt {
        DType::F32 => "f32_r",
        DType::F16 => "f16_r",
        DType::Bf16 => "bf16_r",
    }
}

/// The solution the override file puts first for this problem (`overrides::hipblaslt`), if it
/// is one of ours.
fn overridden(m: &Model, g: &Gemm) -> Option<i32> {
    let key = overrides::Key {
        trans_a: g.trans_a,
        trans_b: g.trans_b,
        batch: g.batch,
        m: g.m,
        n: g.n,
        k: g.k,
        a_type: type_name(g.a.dt),
        c_type: type_name(g.c.dt),
    };
    let v = &m.versions.hipblaslt;
    overrides::hipblaslt(&m.versions.hipblaslt_git, (v.major, v.minor), &key)
        .filter(|i| (ALGO_BASE..ALGO_BASE + m.hipblaslt.algos).contains(i))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatmulDescCreate(
    desc: *mut *mut c_void,
    compute: i32,
    scale: i32,
) -> i32 {
    call(|m| {
        // The scale type must be 32F (rocblaslt also takes 64F and 32I, which no caller here uses).
        let Some(scale) = data_type(m, scale)
            .filter(|s| *s == DType::F32)
            .filter(|_| compute_type_known(m, compute))
        else {
            return INVALID_VALUE;
        };
        let d = Desc {
            scale,
            trans_a: false,
            trans_b: false,
        };
        // SAFETY: null is checked by create.
        ok_or(unsafe { crate::create(&DESCS, desc, d) }, INVALID_VALUE)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatmulDescDestroy(desc: *mut c_void) -> i32 {
    call(|_| ok_or(DESCS.remove(desc as usize).is_some(), INVALID_VALUE))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatmulDescSetAttribute(
    desc: *mut c_void,
    attr: i32,
    buf: *const c_void,
    size: usize,
) -> i32 {
    call(|_| {
        if buf.is_null() || !DESCS.contains(desc as usize) {
            return INVALID_VALUE;
        }
        if attr != 0 && attr != 1 {
            // Epilogues, bias and pointer modes are accepted and ignored.
            return SUCCESS;
        }
        // SAFETY: buf holds `size` bytes; an op is an int32.
        let op = match size {
            4 => unsafe { crate::get(buf.cast::<i32>()) }.unwrap_or(0),
            _ => return INVALID_VALUE,
        };
        let trans = match op {
            111 => false,
            112 | 113 => true,
            _ => return INVALID_VALUE,
        };
        DESCS.with(desc as usize, |d| match attr {
            0 => d.trans_a = trans,
            _ => d.trans_b = trans,
        });
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatrixLayoutCreate(
    layout: *mut *mut c_void,
    dt: i32,
    rows: u64,
    cols: u64,
    ld: i64,
) -> i32 {
    call(|m| {
        let Some(dt) = data_type(m, dt) else {
            return INVALID_VALUE;
        };
        if ld < 1 || (ld as u64) < rows {
            return INVALID_VALUE;
        }
        let l = Layout {
            dt,
            rows: rows as usize,
            cols: cols as usize,
            ld: ld as usize,
            batch: 1,
            stride: 0,
        };
        // SAFETY: null is checked by create.
        ok_or(unsafe { crate::create(&LAYOUTS, layout, l) }, INVALID_VALUE)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatrixLayoutDestroy(layout: *mut c_void) -> i32 {
    call(|_| ok_or(LAYOUTS.remove(layout as usize).is_some(), INVALID_VALUE))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatrixLayoutSetAttribute(
    layout: *mut c_void,
    attr: i32,
    buf: *const c_void,
    size: usize,
) -> i32 {
    call(|m| {
        if buf.is_null() {
            return INVALID_VALUE;
        }
        // (type, batch count, batch stride) attribute numbers: BATCH_COUNT 0 and
        // STRIDED_BATCH_OFFSET 1 in every release; TYPE (2) exists from ROCm 6.0 on.
        let (ty, count, stride) = if m.hipblaslt_hipdatatype() {
            (2, 0, 1)
        } else {
            (-1, 0, 1)
        };
        // SAFETY: buf holds `size` bytes, checked against each attribute's type.
        let (v4, v8) = unsafe { (crate::get(buf.cast::<i32>()), crate::get(buf.cast::<i64>())) };
        let change: Box<dyn FnOnce(&mut Layout) -> bool> = match (attr, size) {
            (a, 4) if a == ty => match v4.and_then(|v| data_type(m, v)) {
                Some(dt) => Box::new(move |l| {
                    l.dt = dt;
                    true
                }),
                None => return INVALID_VALUE,
            },
            (a, 4) if a == count => Box::new(move |l| match v4 {
                Some(b) if b >= 1 => {
                    l.batch = b as usize;
                    true
                }
                _ => false,
            }),
            (a, 8) if a == stride => Box::new(move |l| match v8 {
                Some(s) if s >= 0 => {
                    l.stride = s as usize;
                    true
                }
                _ => false,
            }),
            _ => return INVALID_VALUE,
        };
        ok_or(
            LAYOUTS.with(layout as usize, change) == Some(true),
            INVALID_VALUE,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatmulPreferenceCreate(pref: *mut *mut c_void) -> i32 {
    // SAFETY: null is checked by create.
    call(|_| ok_or(unsafe { crate::create(&PREFS, pref, 0) }, INVALID_VALUE))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatmulPreferenceDestroy(pref: *mut c_void) -> i32 {
    call(|_| ok_or(PREFS.remove(pref as usize).is_some(), INVALID_VALUE))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatmulPreferenceSetAttribute(
    pref: *mut c_void,
    attr: i32,
    buf: *const c_void,
    size: usize,
) -> i32 {
    call(|_| {
        if buf.is_null() || !PREFS.contains(pref as usize) {
            return INVALID_VALUE;
        }
        if attr == 1 {
            // MAX_WORKSPACE_BYTES, a uint64.
            if size != 8 {
                return INVALID_VALUE;
            }
            // SAFETY: buf holds 8 bytes.
            let v = unsafe { crate::get(buf.cast::<u64>()) }.unwrap_or(0);
            PREFS.with(pref as usize, |p| *p = v);
        }
        SUCCESS
    })
}

/// The GEMM the descriptors describe (pointers and scalars still to fill in).
fn problem(
    desc: *mut c_void,
    a: *mut c_void,
    b: *mut c_void,
    c: *mut c_void,
    d: *mut c_void,
) -> Result<(Desc, Gemm), i32> {
    let desc = DESCS.get(desc as usize).ok_or(INVALID_VALUE)?;
    let l = |h: *mut c_void| LAYOUTS.get(h as usize).ok_or(INVALID_VALUE);
    let (la, lb, lc, ld) = (l(a)?, l(b)?, l(c)?, l(d)?);
    let (m, n) = (ld.rows, ld.cols);
    let (am, k) = if desc.trans_a {
        (la.cols, la.rows)
    } else {
        (la.rows, la.cols)
    };
    let (bk, bn) = if desc.trans_b {
        (lb.cols, lb.rows)
    } else {
        (lb.rows, lb.cols)
    };
    if am != m || bk != k || bn != n || lc.rows != m || lc.cols != n {
        return Err(INVALID_VALUE);
    }
    let batch = ld.batch;
    if [la.batch, lb.batch, lc.batch].iter().any(|b| *b != batch) {
        return Err(INVALID_VALUE);
    }
    if la.dt != lb.dt || lc.dt != ld.dt || (ld.dt != la.dt && ld.dt != DType::F32) {
        return Err(NOT_SUPPORTED);
    }
    let mat = |l: Layout| Mat {
        ptr: 0,
        dt: l.dt,
        rows: l.rows,
        cols: l.cols,
        ld: l.ld,
        stride: l.stride,
    };
    let g = Gemm {
        trans_a: desc.trans_a,
        trans_b: desc.trans_b,
        m,
        n,
        k,
        batch,
        a: mat(la),
        b: mat(lb),
        c: mat(lc),
        d: mat(ld),
        alpha: 1.0,
        beta: 0.0,
    };
    Ok((desc, g))
}

fn rule(g: &Gemm) -> Option<Action> {
    let keys = [
        ("m", V::N(g.m as i64)),
        ("n", V::N(g.n as i64)),
        ("k", V::N(g.k as i64)),
        ("batch", V::N(g.batch as i64)),
        ("dtype", V::S(g.a.dt.name())),
    ];
    faults::check(Lib::Hipblaslt, None, &keys, |_| true)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatmulAlgoGetHeuristic(
    handle: *mut c_void,
    desc: *mut c_void,
    a: *mut c_void,
    b: *mut c_void,
    c: *mut c_void,
    d: *mut c_void,
    pref: *mut c_void,
    requested: i32,
    results: *mut c_void,
    returned: *mut i32,
) -> i32 {
    call(|m| {
        if !HANDLES.contains(handle as usize) {
            return NOT_INITIALIZED;
        }
        if requested < 1 || results.is_null() || returned.is_null() {
            return INVALID_VALUE;
        }
        // SAFETY: returned checked non-null.
        unsafe { crate::put(returned, 0) };
        let g = match problem(desc, a, b, c, d) {
            Ok((_, g)) => g,
            Err(e) => return e,
        };
        if rule(&g) == Some(Action::NotSupported) || m.hipblaslt.algos == 0 {
            return NOT_SUPPORTED;
        }
        let max_ws = PREFS.get(pref as usize).unwrap_or(0);
        let n = requested.min(m.hipblaslt.algos);
        // The override file's solution first, the others after it in their order.
        let first = overridden(m, &g);
        let order: Vec<i32> = first
            .into_iter()
            .chain((0..m.hipblaslt.algos).map(|i| ALGO_BASE + i))
            .enumerate()
            .filter(|(at, a)| *at == 0 || Some(*a) != first)
            .map(|(_, a)| a - ALGO_BASE)
            .take(n as usize)
            .collect();
        for (slot, &i) in order.iter().enumerate() {
            let slot = slot as i32;
            // Odd algorithms want a workspace, as far as the preference allows.
            let ws = if i % 2 == 1 {
                max_ws.min(ALGO_WORKSPACE)
            } else {
                0
            };
            // SAFETY: the caller's array holds `requested` 56-byte results.
            unsafe {
                let e = results.cast::<u8>().add(slot as usize * 56);
                std::ptr::write_bytes(e, 0, 56);
                crate::put(e.cast::<i32>(), ALGO_BASE + i);
                crate::put(e.add(8).cast::<u64>(), ws);
                crate::put(e.add(16).cast::<u64>(), ws);
                crate::put(e.add(24).cast::<u64>(), ws);
                crate::put(e.add(36).cast::<f32>(), 1.0);
            }
        }
        // SAFETY: returned checked non-null.
        unsafe { crate::put(returned, order.len() as i32) };
        SUCCESS
    })
}

/// How many times the algorithm `algo` points at computes the GEMM (its rank's `repeat`), or
/// INVALID_VALUE when it wants more workspace than it was given; 1 for a null algorithm.
fn algo_repeat(m: &Model, algo: *const c_void, ws_size: usize) -> Result<u32, i32> {
    if algo.is_null() {
        return Ok(1);
    }
    // SAFETY: a 24-byte hipblasLtMatmulAlgo_t.
    let (idx, ws) = unsafe {
        (
            crate::get(algo.cast::<i32>()),
            crate::get(algo.cast::<u8>().add(8).cast::<u64>()),
        )
    };
    let ours = idx.filter(|i| (ALGO_BASE..ALGO_BASE + m.hipblaslt.algos).contains(i));
    let Some(i) = ours else {
        return Ok(1);
    };
    if ws.unwrap_or(0) > ws_size as u64 {
        return Err(INVALID_VALUE);
    }
    let rank = (i - ALGO_BASE) as usize;
    Ok(m.hipblaslt.repeat.get(rank).copied().unwrap_or(1).max(1))
}

/// A scalar of the descriptor's scale type.
unsafe fn scalar(p: *const c_void, dt: DType) -> Option<f64> {
    if p.is_null() {
        return None;
    }
    // SAFETY: p points to one scalar of the scale type (the C contract).
    Some(unsafe { elem::load(p as usize, dt, 0) } as f64)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatmul(
    handle: *mut c_void,
    desc: *mut c_void,
    alpha: *const c_void,
    a: *const c_void,
    a_desc: *mut c_void,
    b: *const c_void,
    b_desc: *mut c_void,
    beta: *const c_void,
    c: *const c_void,
    c_desc: *mut c_void,
    d: *mut c_void,
    d_desc: *mut c_void,
    algo: *const c_void,
    _ws: *mut c_void,
    ws_size: usize,
    stream: *mut c_void,
) -> i32 {
    call(|m| {
        if !HANDLES.contains(handle as usize) {
            return NOT_INITIALIZED;
        }
        let (dsc, mut g) = match problem(desc, a_desc, b_desc, c_desc, d_desc) {
            Ok(p) => p,
            Err(e) => return e,
        };
        // SAFETY: scalars of the scale type (the C contract).
        let (Some(al), Some(be)) = (unsafe { scalar(alpha, dsc.scale) }, unsafe {
            scalar(beta, dsc.scale)
        }) else {
            return INVALID_VALUE;
        };
        (g.alpha, g.beta) = (al, be);
        (g.a.ptr, g.b.ptr, g.c.ptr, g.d.ptr) = (a as usize, b as usize, c as usize, d as usize);
        let repeat = match algo_repeat(m, algo, ws_size) {
            Ok(r) => r,
            Err(e) => return e,
        };
        let action = rule(&g);
        match action {
            Some(Action::NotSupported) => return NOT_SUPPORTED,
            Some(Action::Error) => return INTERNAL_ERROR,
            _ => {}
        }
        faults::ran(faults::Ran::Gemm);
        if !g.buffers_valid() || !capture::stream_known(stream as usize) {
            return INVALID_VALUE;
        }
        capture::submit(
            stream as usize,
            Arc::new(move || {
                let fill = match action {
                    Some(Action::Zeros) => Some(elem::fill_value(true)),
                    Some(Action::Nan) => Some(elem::fill_value(false)),
                    Some(a) => {
                        faults::trap(a);
                        None
                    }
                    None => None,
                };
                // A slower solution computes the same result more than once (real time).
                if (0..repeat).all(|_| g.run(fill)) {
                    SUCCESS
                } else {
                    EXECUTION_FAILED
                }
            }),
        )
    })
}

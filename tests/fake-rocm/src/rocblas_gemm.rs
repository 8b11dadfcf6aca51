//! rocBLAS's GEMMs: rocblas_gemm_ex and rocblas_gemm_strided_batched_ex (rocBLAS's own pick,
//! `rocblas_gemm_algo_standard`, or one solution by index, `rocblas_gemm_algo_solution_index`),
//! and their `_get_solutions` lists. The model's `[rocblas] solutions` Tensile solutions are
//! numbered 100, 101, ...; rocBLAS's index of Tensile solution t is t + 1 before rocBLAS 5 and
//! -(t + 1) - 10 from rocBLAS 5 (ROCm 7), as the real library numbers them. The standard pick is
//! rank 0, or the solution ROCBLAS_TENSILE_GEMM_OVERRIDE_PATH names for the problem.

use crate::capture;
use crate::elem::{self, DType};
use crate::faults::{self, Action, Lib, V};
use crate::gemm::{Gemm, Mat};
use crate::model::Model;
use crate::overrides;
use crate::rocblas::{
    HANDLES, INTERNAL_ERROR, INVALID_HANDLE, INVALID_POINTER, INVALID_SIZE, INVALID_VALUE,
    NOT_IMPLEMENTED, SUCCESS, call, dtype, trans,
};
use std::ffi::c_void;
use std::sync::Arc;

const TENSILE_BASE: i32 = 100;
const ALGO_STANDARD: i32 = 0;
const ALGO_SOLUTION_INDEX: i32 = 1;

/// rocBLAS's index of the solution at `rank`.
fn index_of(m: &Model, rank: i32) -> i32 {
    let t = TENSILE_BASE + rank;
    if major(m) < 5 { t + 1 } else { -(t + 1) - 10 }
}

fn major(m: &Model) -> u32 {
    m.versions
        .rocblas
        .split('.')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
}

/// The rank of rocBLAS solution `index`, if it is one of the model's.
fn rank_of(m: &Model, index: i32) -> Option<i32> {
    (0..m.rocblas.solutions).find(|r| index_of(m, *r) == index)
}

/// One GEMM call's arguments (a gemm_ex call is a batch of one with strides of 1 in Tensile's
/// key).
struct Args {
    handle: *mut c_void,
    trans: (i32, i32),
    mnk: (i32, i32, i32),
    alpha: *const c_void,
    beta: *const c_void,
    ops: [(*const c_void, i32, i32, i64); 4],
    batch: i32,
    compute: i32,
    /// Strides as Tensile's override key sees them (1 for gemm_ex).
    key_strides: [i64; 3],
}

fn type_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "f32_r",
        DType::F16 => "f16_r",
        DType::Bf16 => "bf16_r",
    }
}

/// The problem checked as rocBLAS checks it: the GEMM, its scalars, or the status to return.
fn problem(x: &Args) -> Result<(Gemm, overrides::RbKey), i32> {
    if HANDLES.get(x.handle as usize).is_none() {
        return Err(INVALID_HANDLE);
    }
    let (Some(ta), Some(tb)) = (trans(x.trans.0), trans(x.trans.1)) else {
        return Err(INVALID_VALUE);
    };
    let (m, n, k) = x.mnk;
    if m < 0 || n < 0 || k < 0 || x.batch < 0 {
        return Err(INVALID_SIZE);
    }
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let (a_rows, a_cols) = if ta { (ku, mu) } else { (mu, ku) };
    let (b_rows, b_cols) = if tb { (nu, ku) } else { (ku, nu) };
    let [a, b, c, d] = x.ops;
    if a.2 < a_rows.max(1) as i32 || b.2 < b_rows.max(1) as i32 || c.2 < m.max(1) || d.2 < m.max(1)
    {
        return Err(INVALID_SIZE);
    }
    if x.ops.iter().any(|o| o.3 < 0) {
        return Err(INVALID_SIZE);
    }
    let (Some(at), Some(bt), Some(ct), Some(dt)) = (dtype(a.1), dtype(b.1), dtype(c.1), dtype(d.1))
    else {
        return Err(NOT_IMPLEMENTED);
    };
    if x.compute != 151 || at != bt || ct != dt || (dt != at && dt != DType::F32) {
        return Err(NOT_IMPLEMENTED);
    }
    if x.alpha.is_null() || x.beta.is_null() {
        return Err(INVALID_POINTER);
    }
    // SAFETY: f32 compute takes float scalars (host pointer mode).
    let (al, be) = unsafe {
        (
            elem::load(x.alpha as usize, DType::F32, 0),
            elem::load(x.beta as usize, DType::F32, 0),
        )
    };
    let mat = |o: (*const c_void, i32, i32, i64), dt, rows, cols| Mat {
        ptr: o.0 as usize,
        dt,
        rows,
        cols,
        ld: o.2 as usize,
        stride: o.3 as usize,
    };
    let g = Gemm {
        trans_a: ta,
        trans_b: tb,
        m: mu,
        n: nu,
        k: ku,
        batch: x.batch as usize,
        a: mat(a, at, a_rows, a_cols),
        b: mat(b, bt, b_rows, b_cols),
        c: mat(c, ct, mu, nu),
        d: mat(d, dt, mu, nu),
        alpha: al as f64,
        beta: be as f64,
    };
    let key = overrides::RbKey {
        key: overrides::Key {
            trans_a: ta,
            trans_b: tb,
            batch: x.batch as usize,
            m: mu,
            n: nu,
            k: ku,
            a_type: type_name(at),
            c_type: type_name(ct),
        },
        beta: f64::from(be),
        ld: [a.2, b.2, c.2].map(i64::from),
        stride: x.key_strides,
    };
    Ok((g, key))
}

/// The GEMM: rocBLAS's own pick (the override file's solution, else rank 0) or the solution
/// named by index, computed `repeat` times for that solution's rank.
fn gemm(x: Args, algo: i32, solution_index: i32) -> i32 {
    call(|m| {
        let (g, key) = match problem(&x) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let rank = match algo {
            ALGO_STANDARD => overrides::rocblas(&key, |t| {
                (0..m.rocblas.solutions).contains(&(t - TENSILE_BASE))
            })
            .map_or(0, |t| t - TENSILE_BASE),
            ALGO_SOLUTION_INDEX => match rank_of(m, solution_index) {
                Some(r) => r,
                None => return INVALID_VALUE,
            },
            _ => return INVALID_VALUE,
        };
        let repeat = m
            .rocblas
            .repeat
            .get(rank as usize)
            .copied()
            .unwrap_or(1)
            .max(1);
        if g.m == 0 || g.n == 0 || g.batch == 0 {
            return SUCCESS;
        }
        // C is not read when beta is 0, so it may be null then.
        if g.a.ptr == 0 || g.b.ptr == 0 || g.d.ptr == 0 || (g.c.ptr == 0 && g.beta != 0.0) {
            return INVALID_POINTER;
        }
        let keys = [
            ("m", V::N(g.m as i64)),
            ("n", V::N(g.n as i64)),
            ("k", V::N(g.k as i64)),
            ("batch", V::N(g.batch as i64)),
            ("dtype", V::S(g.a.dt.name())),
        ];
        let action = faults::check(Lib::Rocblas, None, &keys, |_| true);
        match action {
            Some(Action::NotSupported) => return NOT_IMPLEMENTED,
            Some(Action::Error) => return INTERNAL_ERROR,
            _ => {}
        }
        faults::ran(faults::Ran::Gemm);
        if !g.buffers_valid() {
            return INVALID_POINTER;
        }
        let Some(h) = HANDLES.get(x.handle as usize) else {
            return INVALID_HANDLE;
        };
        capture::submit(
            h.stream,
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
                if (0..repeat).all(|_| g.run(fill)) {
                    SUCCESS
                } else {
                    INVALID_POINTER
                }
            }),
        )
    })
}

/// The solutions for a problem: their count into `size` when `list` is null, else up to
/// `*size` indices into `list`.
fn solutions(x: Args, list: *mut i32, size: *mut i32) -> i32 {
    call(|m| {
        if let Err(e) = problem(&x) {
            return e;
        }
        if size.is_null() {
            return INVALID_POINTER;
        }
        let n = m.rocblas.solutions;
        if list.is_null() {
            // SAFETY: size checked non-null.
            unsafe { crate::put(size, n) };
            return SUCCESS;
        }
        // SAFETY: size checked non-null; list holds *size ints (the C contract).
        let cap = unsafe { crate::get(size) }.unwrap_or(0);
        for r in 0..n.min(cap) {
            // SAFETY: r < cap.
            unsafe { crate::put(list.add(r as usize), index_of(m, r)) };
        }
        SUCCESS
    })
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rocblas_gemm_ex(
    handle: *mut c_void,
    trans_a: i32,
    trans_b: i32,
    m: i32,
    n: i32,
    k: i32,
    alpha: *const c_void,
    a: *const c_void,
    a_type: i32,
    lda: i32,
    b: *const c_void,
    b_type: i32,
    ldb: i32,
    beta: *const c_void,
    c: *const c_void,
    c_type: i32,
    ldc: i32,
    d: *mut c_void,
    d_type: i32,
    ldd: i32,
    compute_type: i32,
    algo: i32,
    solution_index: i32,
    _flags: u32,
) -> i32 {
    let x = Args {
        handle,
        trans: (trans_a, trans_b),
        mnk: (m, n, k),
        alpha,
        beta,
        ops: [
            (a, a_type, lda, 0),
            (b, b_type, ldb, 0),
            (c, c_type, ldc, 0),
            (d.cast_const(), d_type, ldd, 0),
        ],
        batch: 1,
        compute: compute_type,
        key_strides: [1, 1, 1],
    };
    gemm(x, algo, solution_index)
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rocblas_gemm_strided_batched_ex(
    handle: *mut c_void,
    trans_a: i32,
    trans_b: i32,
    m: i32,
    n: i32,
    k: i32,
    alpha: *const c_void,
    a: *const c_void,
    a_type: i32,
    lda: i32,
    stride_a: i64,
    b: *const c_void,
    b_type: i32,
    ldb: i32,
    stride_b: i64,
    beta: *const c_void,
    c: *const c_void,
    c_type: i32,
    ldc: i32,
    stride_c: i64,
    d: *mut c_void,
    d_type: i32,
    ldd: i32,
    stride_d: i64,
    batch_count: i32,
    compute_type: i32,
    algo: i32,
    solution_index: i32,
    _flags: u32,
) -> i32 {
    let x = Args {
        handle,
        trans: (trans_a, trans_b),
        mnk: (m, n, k),
        alpha,
        beta,
        ops: [
            (a, a_type, lda, stride_a),
            (b, b_type, ldb, stride_b),
            (c, c_type, ldc, stride_c),
            (d.cast_const(), d_type, ldd, stride_d),
        ],
        batch: batch_count,
        compute: compute_type,
        key_strides: [stride_a, stride_b, stride_c],
    };
    gemm(x, algo, solution_index)
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rocblas_gemm_ex_get_solutions(
    handle: *mut c_void,
    trans_a: i32,
    trans_b: i32,
    m: i32,
    n: i32,
    k: i32,
    alpha: *const c_void,
    a: *const c_void,
    a_type: i32,
    lda: i32,
    b: *const c_void,
    b_type: i32,
    ldb: i32,
    beta: *const c_void,
    c: *const c_void,
    c_type: i32,
    ldc: i32,
    d: *mut c_void,
    d_type: i32,
    ldd: i32,
    compute_type: i32,
    _algo: i32,
    _flags: u32,
    list: *mut i32,
    size: *mut i32,
) -> i32 {
    let x = Args {
        handle,
        trans: (trans_a, trans_b),
        mnk: (m, n, k),
        alpha,
        beta,
        ops: [
            (a, a_type, lda, 0),
            (b, b_type, ldb, 0),
            (c, c_type, ldc, 0),
            (d.cast_const(), d_type, ldd, 0),
        ],
        batch: 1,
        compute: compute_type,
        key_strides: [1, 1, 1],
    };
    solutions(x, list, size)
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rocblas_gemm_strided_batched_ex_get_solutions(
    handle: *mut c_void,
    trans_a: i32,
    trans_b: i32,
    m: i32,
    n: i32,
    k: i32,
    alpha: *const c_void,
    a: *const c_void,
    a_type: i32,
    lda: i32,
    stride_a: i64,
    b: *const c_void,
    b_type: i32,
    ldb: i32,
    stride_b: i64,
    beta: *const c_void,
    c: *const c_void,
    c_type: i32,
    ldc: i32,
    stride_c: i64,
    d: *mut c_void,
    d_type: i32,
    ldd: i32,
    stride_d: i64,
    batch_count: i32,
    compute_type: i32,
    _algo: i32,
    _flags: u32,
    list: *mut i32,
    size: *mut i32,
) -> i32 {
    let x = Args {
        handle,
        trans: (trans_a, trans_b),
        mnk: (m, n, k),
        alpha,
        beta,
        ops: [
            (a, a_type, lda, stride_a),
            (b, b_type, ldb, stride_b),
            (c, c_type, ldc, stride_c),
            (d.cast_const(), d_type, ldd, stride_d),
        ],
        batch: batch_count,
        compute: compute_type,
        key_strides: [stride_a, stride_b, stride_c],
    };
    solutions(x, list, size)
}

//! GEMM through rocBLAS: `rocblas_gemm_ex` for one matrix (what PyTorch calls through hipBLAS),
//! `rocblas_gemm_strided_batched_ex` for a batch; rocBLAS's own pick (`rocblas`) or one of its
//! solutions by index (`rocblas#<rank>-sol<index>`, from `rocblas_gemm_ex_get_solutions`, the
//! index rocBLAS's override file and PyTorch TunableOp's `Gemm_Rocblas_<index>` name).

use super::hip::Ptr;
use super::libs::DevRef;
use super::rocblas::{self as rb, RocblasRef};
use crate::backend::UnitError;
use crate::backend::engine::gemm::{Heuristic, Scalars, col_major};
use crate::dtype::DType;
use crate::op::gemm::Gemm;
use std::ffi::{c_int, c_void};

/// rocBLAS's solutions as solvers: `rocblas#<rank>-sol<index>` (an index may be negative:
/// rocBLAS 5 numbers Tensile's solutions below -10).
pub const RB: Heuristic = Heuristic {
    library: "rocBLAS",
    prefix: "rocblas#",
    tag: "-sol",
    first: &[],
    usage: "rocblas, rocblas#N, hipblaslt, hipblaslt#N or all",
    not_supported: "rocblas_status_not_implemented",
    id_noun: "solution",
    named: "",
};

/// The most solutions listed per problem.
const MAX_SOLUTIONS: usize = 256;

/// The column-major call's arguments.
struct Dims {
    op_a: c_int,
    op_b: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    lda: c_int,
    ldb: c_int,
    ldc: c_int,
    strides: [i64; 3],
    batch: c_int,
    ab: c_int,
    c: c_int,
    compute: c_int,
}

fn dims(p: &Gemm) -> Result<Dims, UnitError> {
    if p.compute == DType::Tf32 {
        return Err(UnitError::Unsupported(
            "rocBLAS gemm_ex has no TF32 compute type".into(),
        ));
    }
    let ty = |d: DType| match d {
        DType::F16 => rb::F16,
        DType::Bf16 => rb::BF16,
        _ => rb::F32,
    };
    let int = |v: usize| {
        c_int::try_from(v).map_err(|_| UnitError::Unsupported(format!("{v} exceeds rocBLAS's int")))
    };
    let op = |t: bool| if t { rb::OP_T } else { rb::OP_N };
    let ((ar, ac), (br, bc)) = col_major(p);
    Ok(Dims {
        op_a: op(p.trans_b),
        op_b: op(p.trans_a),
        m: int(p.n)?,
        n: int(p.m)?,
        k: int(p.k)?,
        lda: int(ar.max(1))?,
        ldb: int(br.max(1))?,
        ldc: int(p.n.max(1))?,
        strides: [(ar * ac) as i64, (br * bc) as i64, (p.n * p.m) as i64],
        batch: int(p.batch)?,
        ab: ty(p.dtype),
        c: ty(p.out_dtype),
        compute: if p.compute == DType::F16 {
            rb::F16
        } else {
            rb::F32
        },
    })
}

/// One call's arguments beyond the problem: the handle, host scalars and device operands.
struct Operands {
    handle: Ptr,
    al: *const c_void,
    be: *const c_void,
    a: *const c_void,
    b: *const c_void,
    c: *mut c_void,
}

/// rocblas_gemm_ex_get_solutions, or its strided-batched form: `out` null asks for the count.
///
/// # Safety
/// `o` holds a live handle, host scalars and device pointers; `out` is null or holds `*size`
/// ints.
#[rustfmt::skip]
unsafe fn list_call(lib: &RocblasRef, d: &Dims, o: &Operands, single: bool, out: *mut c_int, size: &mut c_int) -> c_int {
    let api = &lib.api;
    let (a, b, c) = (o.a, o.b, o.c);
    let [sa, sb, sc] = d.strides;
    let pick = rb::ALGO_SOLUTION_INDEX;
    // SAFETY: the caller's contract; the argument order is rocBLAS's header's.
    unsafe {
        match (single, api.rocblas_gemm_ex_get_solutions, api.rocblas_gemm_strided_batched_ex_get_solutions) {
            (true, Some(f), _) => f(o.handle, d.op_a, d.op_b, d.m, d.n, d.k, o.al, a, d.ab, d.lda, b, d.ab, d.ldb, o.be, c, d.c, d.ldc, c, d.c, d.ldc, d.compute, pick, 0, out, size),
            (_, _, Some(f)) => f(o.handle, d.op_a, d.op_b, d.m, d.n, d.k, o.al, a, d.ab, d.lda, sa, b, d.ab, d.ldb, sb, o.be, c, d.c, d.ldc, sc, c, d.c, d.ldc, sc, d.batch, d.compute, pick, 0, out, size),
            _ => 0,
        }
    }
}

/// The solutions rocBLAS lists for the problem (empty where this rocBLAS cannot list them).
/// The call reads no memory: one small buffer stands for every operand.
pub fn solutions(dev: &DevRef, lib: &RocblasRef, p: &Gemm) -> Result<Vec<i32>, UnitError> {
    let d = dims(p)?;
    let api = &lib.api;
    let single = p.batch == 1 && api.rocblas_gemm_ex_get_solutions.is_some();
    if !single && api.rocblas_gemm_strided_batched_ex_get_solutions.is_none() {
        return Ok(Vec::new());
    }
    let handle = rb::handle(lib, dev.stream.raw)?;
    let Some(buf) = dev.workspace(256)? else {
        return Ok(Vec::new());
    };
    let one = Scalars::ONE;
    let (al, be) = one.ptrs(p.compute == DType::F16);
    let o = Operands {
        handle: handle.raw,
        al,
        be,
        a: buf.ptr,
        b: buf.ptr,
        c: buf.ptr,
    };
    let what = "rocblas_gemm_ex_get_solutions";
    let mut size: c_int = 0;
    // SAFETY: live handle, scalars and buffer; a null list asks for the count.
    lib.check(
        unsafe { list_call(lib, &d, &o, single, std::ptr::null_mut(), &mut size) },
        what,
    )?;
    size = size.clamp(0, MAX_SOLUTIONS as c_int);
    if size == 0 {
        return Ok(Vec::new());
    }
    let mut list = vec![0 as c_int; size as usize];
    // SAFETY: as above; `list` holds `size` ints.
    lib.check(
        unsafe { list_call(lib, &d, &o, single, list.as_mut_ptr(), &mut size) },
        what,
    )?;
    list.truncate(size.clamp(0, list.len() as c_int) as usize);
    Ok(list)
}

/// C = A x B (row-major) for the tensors at the given addresses: rocBLAS's own pick, or
/// `solution`.
pub fn launch(
    lib: &RocblasRef,
    handle: &rb::Handle,
    p: &Gemm,
    (pa, pb, pc): (*const c_void, *const c_void, *mut c_void),
    solution: Option<i32>,
) -> Result<(), UnitError> {
    let d = dims(p)?;
    let one = Scalars::ONE;
    let (al, be) = one.ptrs(p.compute == DType::F16);
    // The column-major view: A' = B, B' = A.
    let o = Operands {
        handle: handle.raw,
        al,
        be,
        a: pb,
        b: pa,
        c: pc,
    };
    let (algo, index) = match solution {
        Some(i) => (rb::ALGO_SOLUTION_INDEX, i),
        None => (rb::ALGO_STANDARD, 0),
    };
    let single = lib.api.rocblas_gemm_ex.is_some() && p.batch == 1;
    // SAFETY: live handle and device buffers sized for the column-major view; D aliases C.
    let rc = unsafe { gemm_call(lib, &d, &o, single, (algo, index)) };
    let what = if single {
        "rocblas_gemm_ex"
    } else {
        "rocblas_gemm_strided_batched_ex"
    };
    lib.check(rc, what)
}

/// rocblas_gemm_ex (`single`: one matrix) or rocblas_gemm_strided_batched_ex, with `algo` and
/// the solution index.
///
/// # Safety
/// `o` holds a live handle, host scalars and device buffers sized for `d`.
#[rustfmt::skip]
unsafe fn gemm_call(lib: &RocblasRef, d: &Dims, o: &Operands, single: bool, (algo, index): (c_int, i32)) -> c_int {
    let [sa, sb, sc] = d.strides;
    let (a, b, c) = (o.a, o.b, o.c);
    // SAFETY: the caller's contract; the argument order is rocBLAS's header's.
    unsafe {
        match lib.api.rocblas_gemm_ex.filter(|_| single) {
            Some(f) => f(o.handle, d.op_a, d.op_b, d.m, d.n, d.k, o.al, a, d.ab, d.lda, b, d.ab, d.ldb, o.be, c.cast_const(), d.c, d.ldc, c, d.c, d.ldc, d.compute, algo, index, 0),
            None => (lib.api.rocblas_gemm_strided_batched_ex)(o.handle, d.op_a, d.op_b, d.m, d.n, d.k, o.al, a, d.ab, d.lda, sa, b, d.ab, d.ldb, sb, o.be, c.cast_const(), d.c, d.ldc, sc, c, d.c, d.ldc, sc, d.batch, d.compute, algo, index, 0),
        }
    }
}

/// What the `chosen` column says of a GEMM the library ran with solution `index` of `lib`
/// (`hipblaslt`, `rocblas`): `tune --verify` reads it back.
pub fn chosen_solution(lib: &str, index: i64) -> String {
    format!("{lib} solution index={index}")
}

/// What `chosen` says of a rocBLAS call.
pub fn chosen(solution: Option<i32>) -> String {
    match solution {
        Some(i) => chosen_solution("rocblas", i.into()),
        None => "rocblas_gemm_ex (rocBLAS's own choice)".into(),
    }
}

/// The solution a `rocblas#<rank>-sol<index>` solver names among `list`.
pub fn pick(list: &[i32], solver: &str) -> Result<i32, UnitError> {
    RB.pick(list, solver, |i| *i)
}

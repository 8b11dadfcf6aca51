//! Safe wrapper around the `gemm` crate's strided matrix multiply.
//!
//! `gemm::gemm` is an unsafe raw-pointer API; everything here checks that every element the
//! call can touch lies inside the slices it was handed, so the single `unsafe` block is sound
//! for any input that gets past the assertions. The callers are internal, so bad shapes are
//! programmer errors and panic rather than return an error.

use rayon::prelude::*;

use super::Real;

/// Strided matrix view description: element (i, j) lives at offset i*row_stride + j*col_stride.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a, T> {
    pub data: &'a [T],
    pub rows: usize,
    pub cols: usize,
    pub row_stride: isize,
    pub col_stride: isize,
}

impl<'a, T> MatRef<'a, T> {
    /// Dense row-major `rows x cols` matrix (leading dimension `cols`).
    pub fn row_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            row_stride: to_isize(cols),
            col_stride: 1,
        }
    }

    /// The same storage read as the transposed matrix; no data moves.
    pub fn t(self) -> Self {
        Self {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }
}

/// Mutable strided destination. Crate-internal: the public `matmul` only writes dense row-major
/// outputs, but the convolution kernels write straight into channel blocks of NCHW tensors.
pub(crate) struct MatMut<'a, T> {
    pub data: &'a mut [T],
    pub rows: usize,
    pub cols: usize,
    pub row_stride: isize,
    pub col_stride: isize,
}

fn to_isize(v: usize) -> isize {
    assert!(
        v <= isize::MAX as usize,
        "matrix dimension {v} does not fit in isize"
    );
    v as isize
}

/// Asserts that every offset `i*rs + j*cs` (i < rows, j < cols) lies in `0..len`.
/// Widened to i128 so that the check itself cannot overflow.
fn assert_in_bounds(what: &str, len: usize, rows: usize, cols: usize, rs: isize, cs: isize) {
    if rows == 0 || cols == 0 {
        return;
    }
    let last_r = (rows - 1) as i128 * rs as i128;
    let last_c = (cols - 1) as i128 * cs as i128;
    let lo = last_r.min(0) + last_c.min(0);
    let hi = last_r.max(0) + last_c.max(0);
    assert!(
        lo >= 0 && hi < len as i128,
        "{what}: {rows}x{cols} view with strides ({rs}, {cs}) reaches offsets {lo}..={hi} \
         outside a slice of length {len}"
    );
}

/// Asserts that distinct (i, j) of a destination map to distinct offsets. A parallel gemm writes
/// different blocks from different threads, so aliasing elements would be a data race.
fn assert_no_self_overlap(rows: usize, cols: usize, rs: isize, cs: isize) {
    if rows <= 1 || cols <= 1 {
        assert!(
            (rows <= 1 || rs != 0) && (cols <= 1 || cs != 0),
            "destination view has a zero stride along a dimension longer than 1"
        );
        return;
    }
    let (rs, cs) = (rs.unsigned_abs() as u128, cs.unsigned_abs() as u128);
    let disjoint = (cs >= 1 && rs >= cols as u128 * cs) || (rs >= 1 && cs >= rows as u128 * rs);
    assert!(
        disjoint,
        "destination {rows}x{cols} view with strides ({rs}, {cs}) overlaps itself"
    );
}

fn parallelism(threads: usize) -> gemm::Parallelism {
    if threads == 1 {
        gemm::Parallelism::None
    } else {
        // 0 is passed through: the gemm crate reads it as "the whole rayon pool".
        gemm::Parallelism::Rayon(threads)
    }
}

/// C = alpha * A * B + beta * C on a strided destination. When `beta` is zero C is never read,
/// so it may hold garbage (NaN included) on entry.
pub(crate) fn matmul_strided<T: Real>(
    c: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    alpha: T,
    beta: T,
    threads: usize,
) {
    let (m, n, k) = (c.rows, c.cols, a.cols);
    assert_eq!(a.rows, m, "A has {} rows, C has {m}", a.rows);
    assert_eq!(b.rows, k, "A is {m}x{k} but B has {} rows", b.rows);
    assert_eq!(b.cols, n, "B has {} columns, C has {n}", b.cols);
    assert_in_bounds("A", a.data.len(), m, k, a.row_stride, a.col_stride);
    assert_in_bounds("B", b.data.len(), k, n, b.row_stride, b.col_stride);
    assert_in_bounds("C", c.data.len(), m, n, c.row_stride, c.col_stride);
    assert_no_self_overlap(m, n, c.row_stride, c.col_stride);
    if m == 0 || n == 0 {
        return;
    }
    let read_dst = beta != T::ZERO;
    // SAFETY: the assertions above prove every offset the call forms for A (m x k), B (k x n)
    // and C (m x n) is inside its slice, and that C's elements are pairwise distinct, so the
    // gemm crate's (possibly multi-threaded) writes never race. C is a `&mut` borrow, so it
    // cannot alias A or B. `gemm::gemm` names its scalars the other way round from BLAS:
    // dst := alpha*dst + beta*lhs*rhs, hence our beta goes first. Its only other requirement is
    // that T be one of its scalar types; for anything else it panics instead of misbehaving.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.data.as_mut_ptr(),
            c.col_stride,
            c.row_stride,
            read_dst,
            a.data.as_ptr(),
            a.col_stride,
            a.row_stride,
            b.data.as_ptr(),
            b.col_stride,
            b.row_stride,
            beta,
            alpha,
            false,
            false,
            false,
            parallelism(threads),
        );
    }
}

/// C[m x n] = alpha * A[m x k] * B[k x n] + beta * C, C row-major with leading dimension n (dense).
///
/// When `beta` is zero C is only written, never read. `threads == 1` runs on the calling thread;
/// any other value lets the gemm crate use that many rayon workers (0 = the whole pool).
pub fn matmul<T: Real>(
    c: &mut [T],
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    alpha: T,
    beta: T,
    threads: usize,
) {
    let (m, n) = (a.rows, b.cols);
    assert_eq!(
        Some(c.len()),
        m.checked_mul(n),
        "C must be a dense {m}x{n} buffer"
    );
    let c = MatMut {
        data: c,
        rows: m,
        cols: n,
        row_stride: to_isize(n),
        col_stride: 1,
    };
    matmul_strided(c, a, b, alpha, beta, threads);
}

/// `batch` independent products C_i = op(A_i) * op(B_i) over dense row-major matrices stored
/// back to back. A_i is stored `m x k` (`k x m` if `trans_a`), B_i `k x n` (`n x k` if
/// `trans_b`), C_i `m x n`; C is overwritten.
///
/// With `batch > 1` the matrices are spread over at most `threads` rayon tasks and each product
/// runs single-threaded, which beats splitting every small gemm; a single matrix gets all the
/// threads inside the gemm instead.
#[allow(clippy::too_many_arguments)] // the signature mirrors a BLAS batched call on purpose
pub fn matmul_batched<T: Real>(
    batch: usize,
    m: usize,
    n: usize,
    k: usize,
    trans_a: bool,
    trans_b: bool,
    a: &[T],
    b: &[T],
    c: &mut [T],
    threads: usize,
) {
    let (a_len, b_len, c_len) = (m * k, k * n, m * n);
    assert_eq!(
        a.len(),
        batch * a_len,
        "A must hold {batch} {m}x{k} matrices"
    );
    assert_eq!(
        b.len(),
        batch * b_len,
        "B must hold {batch} {k}x{n} matrices"
    );
    assert_eq!(
        c.len(),
        batch * c_len,
        "C must hold {batch} {m}x{n} matrices"
    );
    if batch == 0 || c_len == 0 {
        return;
    }

    let view_a = |a_i| {
        if trans_a {
            MatRef::row_major(a_i, k, m).t()
        } else {
            MatRef::row_major(a_i, m, k)
        }
    };
    let view_b = |b_i| {
        if trans_b {
            MatRef::row_major(b_i, n, k).t()
        } else {
            MatRef::row_major(b_i, k, n)
        }
    };
    // Empty A/B (k == 0) cannot be chunked, but the product is still well defined (zero).
    let a_chunk = |i: usize| &a[i * a_len..(i + 1) * a_len];
    let b_chunk = |i: usize| &b[i * b_len..(i + 1) * b_len];
    let one = |i: usize, c_i: &mut [T], gemm_threads: usize| {
        matmul(
            c_i,
            view_a(a_chunk(i)),
            view_b(b_chunk(i)),
            T::ONE,
            T::ZERO,
            gemm_threads,
        );
    };
    each_matrix(c, c_len, batch, threads, one);
}

/// Calls `one(i, c_i, gemm_threads)` for each of the `batch` output matrices of `c` (`c_len`
/// elements each): one after the other with `threads` for each product when there is one
/// matrix or one worker, else contiguous runs of matrices, one run per worker and one thread per
/// product, so that `threads` (0: rayon's pool) bounds the concurrency either way.
fn each_matrix<T: Send>(
    c: &mut [T],
    c_len: usize,
    batch: usize,
    threads: usize,
    one: impl Fn(usize, &mut [T], usize) + Sync,
) {
    let workers = if threads == 0 {
        rayon::current_num_threads()
    } else {
        threads
    };
    if batch == 1 || workers <= 1 {
        for (i, c_i) in c.chunks_exact_mut(c_len).enumerate() {
            one(i, c_i, threads);
        }
        return;
    }
    let per_task = batch.div_ceil(workers);
    c.par_chunks_mut(per_task * c_len)
        .enumerate()
        .for_each(|(t, c_run)| {
            for (j, c_i) in c_run.chunks_exact_mut(c_len).enumerate() {
                one(t * per_task + j, c_i, 1);
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test-only reference: the textbook triple loop over the same strided views.
    fn naive<T: Real>(a: MatRef<'_, T>, b: MatRef<'_, T>) -> Vec<T> {
        let at = |m: &MatRef<'_, T>, i: usize, j: usize| {
            m.data[(i as isize * m.row_stride + j as isize * m.col_stride) as usize]
        };
        let mut c = vec![T::ZERO; a.rows * b.cols];
        for i in 0..a.rows {
            for j in 0..b.cols {
                let mut acc = T::ZERO;
                for p in 0..a.cols {
                    acc += at(&a, i, p) * at(&b, p, j);
                }
                c[i * b.cols + j] = acc;
            }
        }
        c
    }

    /// Deterministic values in [-1, 1) without pulling a RNG crate into the tests.
    fn lcg(seed: u64, len: usize) -> Vec<f64> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }

    fn assert_close<T: Real>(got: &[T], want: &[T], tol: f64) {
        assert_eq!(got.len(), want.len());
        let scale = want.iter().fold(1.0f64, |s, v| s.max(v.to_f64().abs()));
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let (g, w) = (g.to_f64(), w.to_f64());
            assert!(
                (g - w).abs() <= tol * scale,
                "element {i}: got {g}, want {w}"
            );
        }
    }

    #[test]
    fn literal_2x3_times_3x2() {
        // [1 2 3; 4 5 6] * [7 8; 9 10; 11 12] = [58 64; 139 154]
        let a = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [7.0f64, 8.0, 9.0, 10.0, 11.0, 12.0];
        let mut c = [0.0f64; 4];
        matmul(
            &mut c,
            MatRef::row_major(&a, 2, 3),
            MatRef::row_major(&b, 3, 2),
            1.0,
            0.0,
            1,
        );
        assert_eq!(c, [58.0, 64.0, 139.0, 154.0]);

        let (a32, b32) = (a.map(|v| v as f32), b.map(|v| v as f32));
        let mut c32 = [0.0f32; 4];
        matmul(
            &mut c32,
            MatRef::row_major(&a32, 2, 3),
            MatRef::row_major(&b32, 3, 2),
            1.0,
            0.0,
            2,
        );
        assert_eq!(c32, [58.0, 64.0, 139.0, 154.0]);
    }

    #[test]
    fn alpha_beta_follow_blas_convention() {
        let a = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [7.0f64, 8.0, 9.0, 10.0, 11.0, 12.0];
        let mut c = [1.0f64, 2.0, 3.0, 4.0];
        // C = 2*A*B + 10*C
        matmul(
            &mut c,
            MatRef::row_major(&a, 2, 3),
            MatRef::row_major(&b, 3, 2),
            2.0,
            10.0,
            1,
        );
        assert_eq!(c, [126.0, 148.0, 308.0, 348.0]);
    }

    #[test]
    fn beta_zero_ignores_nan_in_c() {
        let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [7.0f32, 8.0, 9.0, 10.0, 11.0, 12.0];
        let mut c = [f32::NAN; 4];
        matmul(
            &mut c,
            MatRef::row_major(&a, 2, 3),
            MatRef::row_major(&b, 3, 2),
            1.0,
            0.0,
            1,
        );
        assert_eq!(c, [58.0, 64.0, 139.0, 154.0]);
    }

    #[test]
    fn transposed_views_literal() {
        // A^T where A is stored 3x2 = [1 4; 2 5; 3 6] gives the same [1 2 3; 4 5 6] as above.
        let a_store = [1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0];
        // B^T where B is stored 2x3 = [7 9 11; 8 10 12].
        let b_store = [7.0f64, 9.0, 11.0, 8.0, 10.0, 12.0];
        let mut c = [0.0f64; 4];
        matmul(
            &mut c,
            MatRef::row_major(&a_store, 3, 2).t(),
            MatRef::row_major(&b_store, 2, 3).t(),
            1.0,
            0.0,
            1,
        );
        assert_eq!(c, [58.0, 64.0, 139.0, 154.0]);
    }

    #[test]
    fn strided_views_match_naive_f32_and_f64() {
        let (m, n, k) = (37, 29, 53);
        // A lives column-major inside a padded buffer (leading dimension 41).
        let a_buf = lcg(1, 41 * k);
        let a = MatRef {
            data: &a_buf,
            rows: m,
            cols: k,
            row_stride: 1,
            col_stride: 41,
        };
        let b_buf = lcg(2, k * n);
        let b = MatRef::row_major(&b_buf, k, n);
        for threads in [1, 2, 0] {
            let mut c = vec![0.0f64; m * n];
            matmul(&mut c, a, b, 1.0, 0.0, threads);
            assert_close(&c, &naive(a, b), 1e-13);
        }

        let a32: Vec<f32> = a_buf.iter().map(|&v| v as f32).collect();
        let b32: Vec<f32> = b_buf.iter().map(|&v| v as f32).collect();
        let a32 = MatRef {
            data: &a32,
            rows: m,
            cols: k,
            row_stride: 1,
            col_stride: 41,
        };
        let b32 = MatRef::row_major(&b32, k, n);
        let mut c32 = vec![0.0f32; m * n];
        matmul(&mut c32, a32, b32, 1.0, 0.0, 1);
        assert_close(&c32, &naive(a32, b32), 1e-5);
    }

    #[test]
    fn k_zero_scales_c() {
        let mut c = [1.0f64, 2.0];
        matmul(
            &mut c,
            MatRef::row_major(&[], 1, 0),
            MatRef::row_major(&[], 0, 2),
            1.0,
            3.0,
            1,
        );
        assert_eq!(c, [3.0, 6.0]);
    }

    #[test]
    #[should_panic(expected = "outside a slice")]
    fn out_of_bounds_view_panics() {
        let a = [0.0f64; 5];
        let b = [0.0f64; 6];
        let mut c = [0.0f64; 4];
        matmul(
            &mut c,
            MatRef::row_major(&a, 2, 3),
            MatRef::row_major(&b, 3, 2),
            1.0,
            0.0,
            1,
        );
    }

    fn check_batched<T: Real>(tol: f64) {
        let (batch, m, n, k) = (5, 7, 6, 9);
        for (trans_a, trans_b) in [(false, false), (true, false), (false, true), (true, true)] {
            let a: Vec<T> = lcg(3, batch * m * k).into_iter().map(T::from_f64).collect();
            let b: Vec<T> = lcg(4, batch * k * n).into_iter().map(T::from_f64).collect();
            let mut want = Vec::new();
            for i in 0..batch {
                let a_i = &a[i * m * k..(i + 1) * m * k];
                let b_i = &b[i * k * n..(i + 1) * k * n];
                let av = if trans_a {
                    MatRef::row_major(a_i, k, m).t()
                } else {
                    MatRef::row_major(a_i, m, k)
                };
                let bv = if trans_b {
                    MatRef::row_major(b_i, n, k).t()
                } else {
                    MatRef::row_major(b_i, k, n)
                };
                want.extend(naive(av, bv));
            }
            for threads in [1, 2, 3] {
                let mut c = vec![T::from_f64(f64::NAN); batch * m * n];
                matmul_batched(batch, m, n, k, trans_a, trans_b, &a, &b, &mut c, threads);
                assert_close(&c, &want, tol);
            }
        }
    }

    #[test]
    fn batched_with_transposes_f64() {
        check_batched::<f64>(1e-13);
    }

    #[test]
    fn batched_with_transposes_f32() {
        check_batched::<f32>(1e-5);
    }

    #[test]
    fn batched_literal_transposed() {
        // Batch of two: the 2x3*3x2 example, then the same with every value doubled (C x4).
        let a = [
            1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0, 2.0, 8.0, 4.0, 10.0, 6.0, 12.0,
        ];
        let b = [
            7.0f32, 8.0, 9.0, 10.0, 11.0, 12.0, 14.0, 16.0, 18.0, 20.0, 22.0, 24.0,
        ];
        let mut c = [0.0f32; 8];
        matmul_batched(2, 2, 2, 3, true, false, &a, &b, &mut c, 2);
        assert_eq!(c, [58.0, 64.0, 139.0, 154.0, 232.0, 256.0, 556.0, 616.0]);
    }
}

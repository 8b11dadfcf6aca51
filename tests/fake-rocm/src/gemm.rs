//! GEMM arithmetic shared by hipBLASLt and rocBLAS: column-major, D = alpha*op(A)*op(B) + beta*C,
//! strided batches, f64 accumulation, one rounding to the output type.

use crate::elem::{self, DType};
use crate::memory;

/// A matrix as stored (before op): rows x cols with leading dimension `ld`, batch `stride`.
#[derive(Clone, Copy, Debug)]
pub struct Mat {
    pub ptr: usize,
    pub dt: DType,
    pub rows: usize,
    pub cols: usize,
    pub ld: usize,
    pub stride: usize,
}

impl Mat {
    /// Bytes the batched matrix spans.
    fn bytes(&self, batch: usize) -> usize {
        if self.rows == 0 || self.cols == 0 || batch == 0 {
            return 0;
        }
        ((batch - 1) * self.stride + (self.cols - 1) * self.ld + self.rows) * self.dt.size()
    }

    fn in_memory(&self, batch: usize) -> bool {
        memory::check(self.ptr, self.bytes(batch))
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Gemm {
    pub trans_a: bool,
    pub trans_b: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    pub a: Mat,
    pub b: Mat,
    pub c: Mat,
    pub d: Mat,
    pub alpha: f64,
    pub beta: f64,
}

/// op(A) (m x k) times op(B) (k x n) for column-major A (lda) and B (ldb): an m x n
/// column-major result.
pub fn matmul(
    g: (bool, bool),
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    ldb: usize,
) -> Vec<f64> {
    let (ta, tb) = g;
    // Row i of op(A) and column j of op(B), each contiguous in k.
    let mut ar = vec![0f32; m * k];
    let mut bc = vec![0f32; n * k];
    for i in 0..m {
        for p in 0..k {
            ar[i * k + p] = if ta { a[p + i * lda] } else { a[i + p * lda] };
        }
    }
    for j in 0..n {
        for p in 0..k {
            bc[j * k + p] = if tb { b[j + p * ldb] } else { b[p + j * ldb] };
        }
    }
    elem::par_rows(n, m, |j, col| {
        let bj = &bc[j * k..(j + 1) * k];
        for (i, out) in col.iter_mut().enumerate() {
            *out = elem::dot(&ar[i * k..(i + 1) * k], bj);
        }
    })
}

/// A stored matrix of one batch as a dense column-major vector (ld = rows).
unsafe fn load(mat: &Mat, batch: usize) -> Vec<f32> {
    let base = batch * mat.stride;
    let mut v = Vec::with_capacity(mat.rows * mat.cols);
    for j in 0..mat.cols {
        for i in 0..mat.rows {
            // SAFETY: inside the extent the caller checked.
            v.push(unsafe { elem::load(mat.ptr, mat.dt, base + i + j * mat.ld) });
        }
    }
    v
}

impl Gemm {
    pub fn buffers_valid(&self) -> bool {
        self.a.in_memory(self.batch)
            && self.b.in_memory(self.batch)
            && (self.beta == 0.0 || self.c.in_memory(self.batch))
            && self.d.in_memory(self.batch)
    }

    /// Runs every batch; `fill` replaces the result (a zeros or NaN fault). False when a buffer
    /// is no longer valid.
    pub fn run(&self, fill: Option<f64>) -> bool {
        if !self.buffers_valid() {
            return false;
        }
        for bi in 0..self.batch {
            let prod = match fill {
                Some(_) => Vec::new(),
                None if self.k == 0 => vec![0.0; self.m * self.n],
                // SAFETY: extents checked by buffers_valid.
                None => unsafe {
                    let (a, b) = (load(&self.a, bi), load(&self.b, bi));
                    matmul(
                        (self.trans_a, self.trans_b),
                        self.m,
                        self.n,
                        self.k,
                        &a,
                        self.a.rows,
                        &b,
                        self.b.rows,
                    )
                },
            };
            for j in 0..self.n {
                for i in 0..self.m {
                    let val = match fill {
                        Some(f) => f,
                        None => {
                            let mut v = self.alpha * prod[i + j * self.m];
                            if self.beta != 0.0 {
                                let ci = bi * self.c.stride + i + j * self.c.ld;
                                // SAFETY: inside C's checked extent.
                                v += self.beta
                                    * unsafe { elem::load(self.c.ptr, self.c.dt, ci) } as f64;
                            }
                            v
                        }
                    };
                    let di = bi * self.d.stride + i + j * self.d.ld;
                    // SAFETY: inside D's checked extent.
                    unsafe { elem::store(self.d.ptr, self.d.dt, di, val) };
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposed_product_by_hand() {
        // A stored 3x2 (lda 3) used transposed: op(A) = [[1,2,3],[4,5,6]] (2x3).
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        // B stored 3x2 column-major (ldb 4, one padding row): B = [[7,10],[8,11],[9,12]].
        let b = [7.0, 8.0, 9.0, -1.0, 10.0, 11.0, 12.0, -1.0];
        let c = matmul((true, false), 2, 2, 3, &a, 3, &b, 4);
        // [[1*7+2*8+3*9, 1*10+2*11+3*12], [4*7+5*8+6*9, 4*10+5*11+6*12]] column-major.
        assert_eq!(c, vec![50.0, 122.0, 68.0, 167.0]);
        // Both transposed: op(B) = B^T where B is stored 2x3 (ldb 2): B^T = [[1,4],[2,5],[3,6]].
        let c = matmul(
            (false, true),
            2,
            2,
            3,
            &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0],
            2,
            &a,
            2,
        );
        // op(A) = [[1,0,1],[0,1,1]] (stored 2x3, lda 2); op(B) = [[1,2],[3,4],[5,6]].
        assert_eq!(c, vec![6.0, 8.0, 8.0, 10.0]);
    }

    #[test]
    fn batched_alpha_beta_in_place() {
        // Two batches of 2x2 in registered "device" memory; C and D alias (in-place GEMM).
        let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
        assert_eq!(unsafe { crate::memory::hipMalloc(&mut p, 64) }, 0);
        let base = p as usize;
        let f = base as *mut f32;
        let ab: [f32; 8] = [1.0, 2.0, 3.0, 4.0, 0.0, 1.0, 1.0, 0.0];
        let cd: [f32; 8] = [1.0; 8];
        unsafe {
            std::ptr::copy_nonoverlapping(ab.as_ptr(), f, 8);
            std::ptr::copy_nonoverlapping(cd.as_ptr(), f.add(8), 8);
        }
        let mat = |ptr| Mat {
            ptr,
            dt: DType::F32,
            rows: 2,
            cols: 2,
            ld: 2,
            stride: 4,
        };
        let g = Gemm {
            trans_a: false,
            trans_b: false,
            m: 2,
            n: 2,
            k: 2,
            batch: 2,
            a: mat(base),
            b: Mat {
                stride: 0,
                ..mat(base + 16)
            },
            c: mat(base + 32),
            d: mat(base + 32),
            alpha: 2.0,
            beta: 0.5,
        };
        assert!(g.run(None));
        let out = unsafe { std::slice::from_raw_parts(f.add(8), 8) }.to_vec();
        // Batch 0: A=[[1,3],[2,4]] * B=[[0,1],[1,0]] (B shared, stride 0) = [[3,1],[4,2]].
        // Batch 1: A=[[0,1],[1,0]] * B = identity.
        assert_eq!(out, vec![6.5, 8.5, 2.5, 4.5, 2.5, 0.5, 0.5, 2.5]);
        assert_eq!(unsafe { crate::memory::hipFree(p) }, 0);
    }
}

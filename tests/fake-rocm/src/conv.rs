//! Convolution arithmetic: direct loops with f64 accumulation, padding, stride, dilation and
//! groups, in the three directions. Tensors are read and written through their strides (that is
//! how NHWC arrives from MIOpen descriptors) and computed on dense NCHW / KCRS copies.

use crate::elem::{self, DType};

/// A 4-d tensor: dims in N, C, H, W order (K, C, R, S for filters) and strides in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tensor {
    pub dims: [usize; 4],
    pub strides: [usize; 4],
}

impl Tensor {
    pub fn packed(dims: [usize; 4]) -> Tensor {
        let [_, c, h, w] = dims;
        Tensor {
            dims,
            strides: [c * h * w, h * w, w, 1],
        }
    }

    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// Elements spanned from the first to the last one (what the buffer must hold).
    pub fn span(&self) -> usize {
        if self.len() == 0 {
            return 0;
        }
        1 + self
            .dims
            .iter()
            .zip(&self.strides)
            .map(|(d, s)| (d - 1) * s)
            .sum::<usize>()
    }

    fn offset(&self, dense: usize) -> usize {
        let [_, c, h, w] = self.dims;
        let (n_, c_, h_, w_) = (
            dense / (c * h * w),
            dense / (h * w) % c,
            dense / w % h,
            dense % w,
        );
        n_ * self.strides[0] + c_ * self.strides[1] + h_ * self.strides[2] + w_ * self.strides[3]
    }

    /// "nhwc" when channels are the innermost dimension.
    pub fn layout(&self) -> &'static str {
        if self.dims[1] > 1 && self.strides[1] == 1 {
            "nhwc"
        } else {
            "nchw"
        }
    }
}

/// Reads a strided tensor into a dense NCHW vector.
///
/// # Safety
/// `base` must hold `t.span()` elements of `dt`.
pub unsafe fn gather(base: usize, dt: DType, t: &Tensor) -> Vec<f32> {
    // SAFETY: every offset is below t.span().
    (0..t.len())
        .map(|i| unsafe { elem::load(base, dt, t.offset(i)) })
        .collect()
}

/// Writes dense NCHW values through the strides: out = alpha * v + beta * out (out is not read
/// when beta is 0), or `fill` everywhere when a fault says so.
///
/// # Safety
/// `base` must hold `t.span()` writable elements of `dt`.
pub unsafe fn scatter(
    base: usize,
    dt: DType,
    t: &Tensor,
    v: &[f64],
    alpha: f64,
    beta: f64,
    fill: Option<f64>,
) {
    for (i, x) in v.iter().enumerate() {
        let o = t.offset(i);
        let val = match fill {
            Some(f) => f,
            // SAFETY: o < t.span().
            None if beta != 0.0 => alpha * x + beta * unsafe { elem::load(base, dt, o) } as f64,
            None => alpha * x,
        };
        // SAFETY: as above.
        unsafe { elem::store(base, dt, o, val) };
    }
}

/// Sizes of one convolution problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub n: usize,
    pub c_in: usize,
    pub c_out: usize,
    pub h: usize,
    pub w: usize,
    pub kh: usize,
    pub kw: usize,
    pub oh: usize,
    pub ow: usize,
    pub pad: [usize; 2],
    pub stride: [usize; 2],
    pub dil: [usize; 2],
    pub groups: usize,
}

/// Output size of one spatial dimension; None when the filter does not fit.
pub fn out_dim(input: usize, k: usize, pad: usize, stride: usize, dil: usize) -> Option<usize> {
    let span = dil * (k.checked_sub(1)?) + 1;
    let padded = input + 2 * pad;
    (padded >= span && stride > 0).then(|| (padded - span) / stride + 1)
}

impl Shape {
    fn cpg(&self) -> usize {
        self.c_in / self.groups
    }

    fn opg(&self) -> usize {
        self.c_out / self.groups
    }

    /// The input row a filter row reads for output row `oy`, if inside the image.
    fn in_row(&self, oy: usize, ky: usize) -> Option<usize> {
        let iy = (oy * self.stride[0] + ky * self.dil[0]) as isize - self.pad[0] as isize;
        (iy >= 0 && (iy as usize) < self.h).then_some(iy as usize)
    }

    /// The output row that reads input row `iy` through filter row `ky`, if any.
    fn out_row(&self, iy: usize, ky: usize) -> Option<usize> {
        let t = iy as isize + self.pad[0] as isize - (ky * self.dil[0]) as isize;
        let s = self.stride[0] as isize;
        (t >= 0 && t % s == 0 && ((t / s) as usize) < self.oh).then_some((t / s) as usize)
    }

    /// Offset of filter column `kx` in an input row (ix = ox * stride + offset), and the output
    /// columns [lo, hi) whose input column lies inside the image.
    fn columns(&self, kx: usize) -> (isize, usize, usize) {
        let off = (kx * self.dil[1]) as isize - self.pad[1] as isize;
        let s = self.stride[1] as isize;
        let lo = if off >= 0 { 0 } else { (-off + s - 1) / s };
        let last = self.w as isize - 1 - off;
        let hi = if last < 0 {
            0
        } else {
            (last / s + 1).min(self.ow as isize)
        };
        (off, lo as usize, hi.max(lo) as usize)
    }
}

/// acc[o] += a * src[o * step + off] for o in lo..hi (the forward direction along a row).
fn axpy(acc: &mut [f64], a: f64, src: &[f32], (off, lo, hi): (isize, usize, usize), step: usize) {
    let (mut o, mut i) = (lo, (lo * step) as isize + off);
    while o < hi {
        acc[o] += a * src[i as usize] as f64;
        o += 1;
        i += step as isize;
    }
}

/// acc[o * step + off] += a * src[o] for o in lo..hi (the transposed direction).
fn axpy_t(acc: &mut [f64], a: f64, src: &[f32], (off, lo, hi): (isize, usize, usize), step: usize) {
    let (mut o, mut i) = (lo, (lo * step) as isize + off);
    while o < hi {
        acc[i as usize] += a * src[o] as f64;
        o += 1;
        i += step as isize;
    }
}

/// Sum of a[o] * b[o * step + off] for o in lo..hi.
fn dot_strided(a: &[f32], b: &[f32], (off, lo, hi): (isize, usize, usize), step: usize) -> f64 {
    let (mut o, mut i, mut acc) = (lo, (lo * step) as isize + off, 0.0f64);
    while o < hi {
        acc += a[o] as f64 * b[i as usize] as f64;
        o += 1;
        i += step as isize;
    }
    acc
}

/// y[n,k,oy,ox] = sum x[n,c,iy,ix] * w[k,c,ky,kx]; x dense NCHW, w dense KCRS, y dense NKHW.
pub fn forward(s: &Shape, x: &[f32], w: &[f32]) -> Vec<f64> {
    let (cpg, opg, ks, plane) = (s.cpg(), s.opg(), s.kh * s.kw, s.h * s.w);
    elem::par_rows(s.n * s.c_out * s.oh, s.ow, |row, acc| {
        let (oy, k, b) = (row % s.oh, row / s.oh % s.c_out, row / (s.oh * s.c_out));
        let g = k / opg;
        for c in 0..cpg {
            let xc = &x[(b * s.c_in + g * cpg + c) * plane..][..plane];
            let wc = &w[(k * cpg + c) * ks..][..ks];
            for ky in 0..s.kh {
                let Some(iy) = s.in_row(oy, ky) else { continue };
                let xrow = &xc[iy * s.w..][..s.w];
                for kx in 0..s.kw {
                    axpy(
                        acc,
                        wc[ky * s.kw + kx] as f64,
                        xrow,
                        s.columns(kx),
                        s.stride[1],
                    );
                }
            }
        }
    })
}

/// dx[n,c,iy,ix] = sum over the outputs that read it of dy[n,k,oy,ox] * w[k,c,ky,kx].
pub fn backward_data(s: &Shape, dy: &[f32], w: &[f32]) -> Vec<f64> {
    let (cpg, opg, ks, oplane) = (s.cpg(), s.opg(), s.kh * s.kw, s.oh * s.ow);
    elem::par_rows(s.n * s.c_in * s.h, s.w, |row, acc| {
        let (iy, ci, b) = (row % s.h, row / s.h % s.c_in, row / (s.h * s.c_in));
        let (g, c) = (ci / cpg, ci % cpg);
        for k in g * opg..(g + 1) * opg {
            let dyk = &dy[(b * s.c_out + k) * oplane..][..oplane];
            let wc = &w[(k * cpg + c) * ks..][..ks];
            for ky in 0..s.kh {
                let Some(oy) = s.out_row(iy, ky) else {
                    continue;
                };
                let dyrow = &dyk[oy * s.ow..][..s.ow];
                for kx in 0..s.kw {
                    axpy_t(
                        acc,
                        wc[ky * s.kw + kx] as f64,
                        dyrow,
                        s.columns(kx),
                        s.stride[1],
                    );
                }
            }
        }
    })
}

/// dw[k,c,ky,kx] = sum over n, oy, ox of dy[n,k,oy,ox] * x[n,c,iy,ix].
pub fn backward_weights(s: &Shape, dy: &[f32], x: &[f32]) -> Vec<f64> {
    let (cpg, opg, plane, oplane) = (s.cpg(), s.opg(), s.h * s.w, s.oh * s.ow);
    elem::par_rows(s.c_out * cpg, s.kh * s.kw, |row, acc| {
        let (c, k) = (row % cpg, row / cpg);
        let ci = k / opg * cpg + c;
        for b in 0..s.n {
            let dyk = &dy[(b * s.c_out + k) * oplane..][..oplane];
            let xc = &x[(b * s.c_in + ci) * plane..][..plane];
            for ky in 0..s.kh {
                for oy in 0..s.oh {
                    let Some(iy) = s.in_row(oy, ky) else { continue };
                    let (dyrow, xrow) = (&dyk[oy * s.ow..][..s.ow], &xc[iy * s.w..][..s.w]);
                    for kx in 0..s.kw {
                        acc[ky * s.kw + kx] += dot_strided(dyrow, xrow, s.columns(kx), s.stride[1]);
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(
        n: usize,
        c_in: usize,
        c_out: usize,
        hw: [usize; 2],
        k: [usize; 2],
        p: usize,
        st: usize,
        d: usize,
        g: usize,
    ) -> Shape {
        Shape {
            n,
            c_in,
            c_out,
            h: hw[0],
            w: hw[1],
            kh: k[0],
            kw: k[1],
            oh: out_dim(hw[0], k[0], p, st, d).unwrap(),
            ow: out_dim(hw[1], k[1], p, st, d).unwrap(),
            pad: [p; 2],
            stride: [st; 2],
            dil: [d; 2],
            groups: g,
        }
    }

    fn data(len: usize, seed: usize) -> Vec<f32> {
        (0..len)
            .map(|i| ((i * 7 + seed * 13) % 11) as f32 - 5.0)
            .collect()
    }

    /// The textbook definition with signed arithmetic, independent of the code under test.
    fn naive(s: &Shape, x: &[f32], w: &[f32]) -> Vec<f64> {
        let mut y = vec![0.0; s.n * s.c_out * s.oh * s.ow];
        let (cpg, opg) = (s.c_in / s.groups, s.c_out / s.groups);
        for b in 0..s.n {
            for k in 0..s.c_out {
                for oy in 0..s.oh {
                    for ox in 0..s.ow {
                        let mut acc = 0.0;
                        for c in 0..cpg {
                            for ky in 0..s.kh {
                                for kx in 0..s.kw {
                                    let iy = (oy * s.stride[0] + ky * s.dil[0]) as isize
                                        - s.pad[0] as isize;
                                    let ix = (ox * s.stride[1] + kx * s.dil[1]) as isize
                                        - s.pad[1] as isize;
                                    if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize
                                    {
                                        continue;
                                    }
                                    let ci = k / opg * cpg + c;
                                    let xv = x[((b * s.c_in + ci) * s.h + iy as usize) * s.w
                                        + ix as usize];
                                    let wv = w[((k * cpg + c) * s.kh + ky) * s.kw + kx];
                                    acc += xv as f64 * wv as f64;
                                }
                            }
                        }
                        y[((b * s.c_out + k) * s.oh + oy) * s.ow + ox] = acc;
                    }
                }
            }
        }
        y
    }

    #[test]
    fn forward_matches_naive() {
        for s in [
            shape(2, 4, 6, [7, 5], [3, 3], 1, 1, 1, 1),
            shape(1, 4, 6, [9, 8], [3, 2], 2, 2, 2, 2),
            shape(1, 3, 3, [5, 5], [1, 1], 0, 1, 1, 3),
        ] {
            let x = data(s.n * s.c_in * s.h * s.w, 1);
            let w = data(s.c_out * s.c_in / s.groups * s.kh * s.kw, 2);
            assert_eq!(forward(&s, &x, &w), naive(&s, &x, &w), "{s:?}");
        }
    }

    /// The backward passes are the adjoints of the forward one: <dy, F(x)> = <B(dy), x> = <dW, w>.
    #[test]
    fn backward_passes_are_adjoints() {
        let s = shape(2, 4, 6, [9, 7], [3, 2], 1, 2, 2, 2);
        let x = data(s.n * s.c_in * s.h * s.w, 3);
        let w = data(s.c_out * s.c_in / s.groups * s.kh * s.kw, 4);
        let dy = data(s.n * s.c_out * s.oh * s.ow, 5);
        let dot = |a: &[f64], b: &[f32]| a.iter().zip(b).map(|(p, q)| p * *q as f64).sum::<f64>();
        let fwd = dot(&forward(&s, &x, &w), &dy);
        assert_eq!(fwd, dot(&backward_data(&s, &dy, &w), &x));
        assert_eq!(fwd, dot(&backward_weights(&s, &dy, &x), &w));
    }

    #[test]
    fn strided_tensors_round_trip() {
        // NHWC expressed as NCHW dims with strides.
        let (n, c, h, w) = (2, 3, 4, 5);
        let t = Tensor {
            dims: [n, c, h, w],
            strides: [h * w * c, 1, w * c, c],
        };
        assert_eq!(t.layout(), "nhwc");
        assert_eq!(t.span(), n * c * h * w);
        let mut buf = vec![0f32; t.span()];
        let vals: Vec<f64> = (0..t.len()).map(|i| i as f64).collect();
        let base = buf.as_mut_ptr() as usize;
        unsafe { scatter(base, DType::F32, &t, &vals, 1.0, 0.0, None) };
        // Element (n=1, c=2, h=3, w=4) sits at its NHWC offset.
        assert_eq!(
            buf[((h + 3) * w + 4) * c + 2],
            (((c + 2) * h + 3) * w + 4) as f32
        );
        let back = unsafe { gather(base, DType::F32, &t) };
        assert!(back.iter().zip(&vals).all(|(a, b)| *a as f64 == *b));
        unsafe { scatter(base, DType::F32, &t, &vals, 2.0, 1.0, None) };
        assert_eq!(buf[1], 3.0 * (h * w) as f32);
    }

    #[test]
    fn output_dims() {
        assert_eq!(out_dim(32, 3, 1, 1, 1), Some(32));
        assert_eq!(out_dim(32, 3, 0, 2, 1), Some(15));
        assert_eq!(out_dim(7, 3, 0, 1, 3), Some(1));
        assert_eq!(out_dim(2, 3, 0, 1, 1), None);
    }
}

//! 2-D convolution (NCHW, cross-correlation like cuDNN/MIOpen/PyTorch) in all three directions.
//!
//! Every direction is lowered to gemm through im2col: for one image and one group the patch
//! matrix `col` has a row per (input channel, kernel row, kernel column) and a column per output
//! pixel, so
//!
//! * forward:        `Y_g  = W_g   x col`
//! * backward data:  `dcol = W_g^T x dY_g`, then col2im scatter-adds `dcol` into `dx`
//! * backward weights: `dW_g += dY_g x col^T`, summed over the batch
//!
//! The patch matrix is built a band of output rows at a time so that it stays cache resident
//! instead of costing `c_in*kh*kw` times the image in memory traffic. Work is spread over images
//! with rayon (each worker running single-threaded gemm); when there are fewer images than
//! threads the leftover threads go to the gemm itself.

use rayon::prelude::*;

use super::Real;
use super::gemm::{MatMut, MatRef, matmul, matmul_strided};

/// Shape of a grouped, padded, strided, dilated 2-D convolution.
///
/// Layouts: x is `[n, c_in, h, w]`, w is `[c_out, c_in/groups, kh, kw]`, y and dy are
/// `[n, c_out, out_h, out_w]`, all dense row-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConvGeom {
    pub n: usize,
    pub c_in: usize,
    pub c_out: usize,
    pub h: usize,
    pub w: usize,
    pub kh: usize,
    pub kw: usize,
    pub pad_h: usize,
    pub pad_w: usize,
    pub stride_h: usize,
    pub stride_w: usize,
    pub dil_h: usize,
    pub dil_w: usize,
    pub groups: usize,
}

/// Number of output positions along one axis; 0 when the dilated kernel does not fit the padded
/// input (or a parameter is 0), so that an invalid geometry never underflows.
fn out_len(input: usize, k: usize, pad: usize, stride: usize, dil: usize) -> usize {
    if k == 0 || stride == 0 || dil == 0 {
        return 0;
    }
    let span = dil * (k - 1) + 1;
    (input + 2 * pad)
        .checked_sub(span)
        .map_or(0, |room| room / stride + 1)
}

impl ConvGeom {
    /// `(h + 2*pad_h - dil_h*(kh-1) - 1) / stride_h + 1`, or 0 if that would be negative.
    pub fn out_h(&self) -> usize {
        out_len(self.h, self.kh, self.pad_h, self.stride_h, self.dil_h)
    }

    /// `(w + 2*pad_w - dil_w*(kw-1) - 1) / stride_w + 1`, or 0 if that would be negative.
    pub fn out_w(&self) -> usize {
        out_len(self.w, self.kw, self.pad_w, self.stride_w, self.dil_w)
    }

    pub fn x_len(&self) -> usize {
        self.n * self.c_in * self.h * self.w
    }

    pub fn w_len(&self) -> usize {
        self.c_out * (self.c_in / self.groups.max(1)) * self.kh * self.kw
    }

    pub fn y_len(&self) -> usize {
        self.n * self.c_out * self.out_h() * self.out_w()
    }

    /// Multiply-adds counted as two FLOPs: `2*n*c_out*out_h*out_w*(c_in/groups)*kh*kw`. The same
    /// count holds for all three directions.
    pub fn flops(&self) -> u64 {
        2 * [
            self.n,
            self.c_out,
            self.out_h(),
            self.out_w(),
            self.c_in / self.groups.max(1),
            self.kh,
            self.kw,
        ]
        .iter()
        .map(|&v| v as u64)
        .product::<u64>()
    }

    /// Checks what the kernels rely on; they panic with this message otherwise. `n == 0` is
    /// allowed (nothing to do), every other extent must be positive.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("c_in", self.c_in),
            ("c_out", self.c_out),
            ("h", self.h),
            ("w", self.w),
            ("kh", self.kh),
            ("kw", self.kw),
            ("stride_h", self.stride_h),
            ("stride_w", self.stride_w),
            ("dil_h", self.dil_h),
            ("dil_w", self.dil_w),
            ("groups", self.groups),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(format!("conv geometry: {name} must be positive"));
        }
        if !self.c_in.is_multiple_of(self.groups) || !self.c_out.is_multiple_of(self.groups) {
            return Err(format!(
                "conv geometry: groups={} must divide c_in={} and c_out={}",
                self.groups, self.c_in, self.c_out
            ));
        }
        if self.out_h() == 0 || self.out_w() == 0 {
            return Err(format!(
                "conv geometry: the {}x{} kernel (dilation {}x{}) does not fit the padded {}x{} input",
                self.kh,
                self.kw,
                self.dil_h,
                self.dil_w,
                self.h + 2 * self.pad_h,
                self.w + 2 * self.pad_w
            ));
        }
        Ok(())
    }
}

/// Target size of one patch-matrix band. Banding bounds the scratch memory per worker (a
/// whole-image patch matrix of a wide layer runs to tens of MiB) and keeps the band L2 resident
/// between im2col and gemm. On the reference 64->128 3x3 56x56 f32 case (2-core AVX-512 EPYC),
/// bands from 64 KiB to 2 MiB timed within noise of each other and about 10% faster forward than
/// a whole-image patch matrix.
const BAND_BYTES: usize = 512 * 1024;
/// Below this many columns per gemm call, the packing overhead starts to dominate.
const MIN_BAND_COLS: usize = 256;

/// Everything derived from a validated geometry that the per-image loops need.
struct Lowering {
    g: ConvGeom,
    oh: usize,
    ow: usize,
    /// Input channels per group.
    cig: usize,
    /// Output channels per group.
    cog: usize,
    /// Rows of the patch matrix: cig * kh * kw.
    kk: usize,
    /// Output rows per band.
    band_rows: usize,
    /// 1x1, stride 1, no padding: the input plane already is the patch matrix.
    pointwise: bool,
}

impl Lowering {
    fn new<T>(g: &ConvGeom) -> Self {
        if let Err(e) = g.validate() {
            panic!("{e}");
        }
        let (oh, ow) = (g.out_h(), g.out_w());
        let kk = g.c_in / g.groups * g.kh * g.kw;
        let band_cols = (BAND_BYTES / (kk * size_of::<T>().max(1))).max(MIN_BAND_COLS);
        Self {
            g: *g,
            oh,
            ow,
            cig: g.c_in / g.groups,
            cog: g.c_out / g.groups,
            kk,
            band_rows: (band_cols / ow).clamp(1, oh),
            pointwise: g.kh == 1
                && g.kw == 1
                && g.stride_h == 1
                && g.stride_w == 1
                && g.pad_h == 0
                && g.pad_w == 0,
        }
    }

    fn x_img(&self) -> usize {
        self.g.c_in * self.g.h * self.g.w
    }

    fn y_img(&self) -> usize {
        self.g.c_out * self.oh * self.ow
    }

    /// Output pixels per image (columns of the full patch matrix).
    fn p(&self) -> usize {
        self.oh * self.ow
    }

    /// Scratch length for one band of the patch matrix.
    fn col_len(&self) -> usize {
        if self.pointwise {
            0
        } else {
            self.kk * self.band_rows * self.ow
        }
    }

    /// Output-row bands `[oy0, oy1)` covering the image.
    fn bands(&self) -> impl Iterator<Item = (usize, usize)> + use<> {
        let (oh, step) = (self.oh, self.band_rows);
        (0..oh).step_by(step).map(move |r| (r, (r + step).min(oh)))
    }

    /// Group `grp`'s input channels inside one image.
    fn x_group<'a, T>(&self, x_img: &'a [T], grp: usize) -> &'a [T] {
        let len = self.cig * self.g.h * self.g.w;
        &x_img[grp * len..(grp + 1) * len]
    }

    /// Group `grp`'s filters as a `cog x kk` row-major matrix.
    fn w_group<'a, T>(&self, w: &'a [T], grp: usize) -> MatRef<'a, T> {
        let len = self.cog * self.kk;
        MatRef::row_major(&w[grp * len..(grp + 1) * len], self.cog, self.kk)
    }

    /// Range of group `grp`'s output channels inside one image of y.
    fn y_group_range(&self, grp: usize) -> std::ops::Range<usize> {
        let len = self.cog * self.p();
        grp * len..(grp + 1) * len
    }

    /// Columns `[oy0*ow, oy1*ow)` of a group's `cog x p` output block, read in place.
    fn y_band<'a, T>(&self, y_grp: &'a [T], oy0: usize, oy1: usize) -> MatRef<'a, T> {
        MatRef {
            data: &y_grp[oy0 * self.ow..],
            rows: self.cog,
            cols: (oy1 - oy0) * self.ow,
            row_stride: self.p() as isize,
            col_stride: 1,
        }
    }

    /// How to split `n` images over the rayon pool: `(images per task, gemm threads per task)`.
    fn schedule(&self) -> (usize, usize) {
        let threads = rayon::current_num_threads().max(1);
        let n = self.g.n.max(1);
        let tasks = n.min(threads);
        (n.div_ceil(tasks), (threads / tasks).max(1))
    }
}

/// Output positions `o` in `0..out` whose input coordinate `o*stride + off - pad` falls in
/// `0..input`, as a half-open range (empty ranges come back as `(hi, hi)`).
fn valid_range(out: usize, input: usize, stride: usize, off: usize, pad: usize) -> (usize, usize) {
    let lo = if off >= pad {
        0
    } else {
        (pad - off).div_ceil(stride)
    };
    let hi = if off >= input + pad {
        0
    } else {
        (input + pad - off).div_ceil(stride)
    }
    .min(out);
    (lo.min(hi), hi)
}

/// Walks every (patch-matrix row, band row) pair of one group and hands `visit` the matching
/// slice of the band row together with the input row segment it maps to, if any:
/// `visit(dst_row, Some((input_row, first_output_col, last_output_col, first_input_col)))`.
/// Shared by im2col and col2im so the index arithmetic exists once.
fn for_each_band_row<F>(l: &Lowering, oy0: usize, oy1: usize, mut visit: F)
where
    F: FnMut(usize, usize, Option<(usize, usize, usize, usize)>),
{
    let g = &l.g;
    let t = (oy1 - oy0) * l.ow;
    let mut row = 0;
    for c in 0..l.cig {
        for ki in 0..g.kh {
            let (y_lo, y_hi) = valid_range(l.oh, g.h, g.stride_h, ki * g.dil_h, g.pad_h);
            for kj in 0..g.kw {
                let (x_lo, x_hi) = valid_range(l.ow, g.w, g.stride_w, kj * g.dil_w, g.pad_w);
                for oy in oy0..oy1 {
                    let at = row * t + (oy - oy0) * l.ow;
                    if oy < y_lo || oy >= y_hi || x_lo == x_hi {
                        visit(at, c, None);
                        continue;
                    }
                    let iy = oy * g.stride_h + ki * g.dil_h - g.pad_h;
                    let ix0 = x_lo * g.stride_w + kj * g.dil_w - g.pad_w;
                    visit(at, c, Some((iy, x_lo, x_hi, ix0)));
                }
                row += 1;
            }
        }
    }
}

/// Fills `col` (`kk x (oy1-oy0)*ow`, row-major) with the patches of output rows `[oy0, oy1)`.
fn im2col<T: Real>(l: &Lowering, x_grp: &[T], oy0: usize, oy1: usize, col: &mut [T]) {
    let (h, w, sw, ow) = (l.g.h, l.g.w, l.g.stride_w, l.ow);
    for_each_band_row(l, oy0, oy1, |at, c, seg| {
        let dst = &mut col[at..at + ow];
        let Some((iy, x_lo, x_hi, ix0)) = seg else {
            dst.fill(T::ZERO);
            return;
        };
        let src = &x_grp[(c * h + iy) * w..(c * h + iy + 1) * w];
        dst[..x_lo].fill(T::ZERO);
        dst[x_hi..].fill(T::ZERO);
        let dst = &mut dst[x_lo..x_hi];
        if sw == 1 {
            dst.copy_from_slice(&src[ix0..ix0 + dst.len()]);
        } else {
            for (d, s) in dst.iter_mut().zip(src[ix0..].iter().step_by(sw)) {
                *d = *s;
            }
        }
    });
}

/// Adds `col` (laid out as im2col would produce it) back onto the input positions it was
/// gathered from; overlapping windows accumulate.
fn col2im<T: Real>(l: &Lowering, col: &[T], oy0: usize, oy1: usize, dx_grp: &mut [T]) {
    let (h, w, sw) = (l.g.h, l.g.w, l.g.stride_w);
    for_each_band_row(l, oy0, oy1, |at, c, seg| {
        let Some((iy, x_lo, x_hi, ix0)) = seg else {
            return;
        };
        let src = &col[at + x_lo..at + x_hi];
        let dst = &mut dx_grp[(c * h + iy) * w..(c * h + iy + 1) * w];
        for (d, s) in dst[ix0..].iter_mut().step_by(sw).zip(src) {
            *d += *s;
        }
    });
}

fn check_len(what: &str, got: usize, want: usize) {
    assert_eq!(
        got, want,
        "{what} has {got} elements, the geometry needs {want}"
    );
}

/// y = conv(x, w): cross-correlation, no kernel flip. `y` is overwritten (never read).
pub fn conv2d_fwd<T: Real>(g: &ConvGeom, x: &[T], w: &[T], y: &mut [T]) {
    let l = Lowering::new::<T>(g);
    check_len("x", x.len(), g.x_len());
    check_len("w", w.len(), g.w_len());
    check_len("y", y.len(), g.y_len());
    if g.n == 0 {
        return;
    }
    let (per_task, gemm_threads) = l.schedule();
    y.par_chunks_mut(per_task * l.y_img())
        .zip(x.par_chunks(per_task * l.x_img()))
        .for_each(|(y_run, x_run)| {
            let mut col = vec![T::ZERO; l.col_len()];
            for (y_img, x_img) in y_run
                .chunks_exact_mut(l.y_img())
                .zip(x_run.chunks_exact(l.x_img()))
            {
                fwd_image(&l, x_img, w, y_img, &mut col, gemm_threads);
            }
        });
}

fn fwd_image<T: Real>(
    l: &Lowering,
    x_img: &[T],
    w: &[T],
    y_img: &mut [T],
    col: &mut [T],
    threads: usize,
) {
    let p = l.p();
    for grp in 0..l.g.groups {
        let x_grp = l.x_group(x_img, grp);
        let w_grp = l.w_group(w, grp);
        let y_grp = &mut y_img[l.y_group_range(grp)];
        if l.pointwise {
            let col = MatRef::row_major(x_grp, l.cig, p);
            matmul(y_grp, w_grp, col, T::ONE, T::ZERO, threads);
            continue;
        }
        for (oy0, oy1) in l.bands() {
            let t = (oy1 - oy0) * l.ow;
            let col = &mut col[..l.kk * t];
            im2col(l, x_grp, oy0, oy1, col);
            // Write the band's columns of Y_g in place: rows are output channels `p` apart.
            let y_band = MatMut {
                data: &mut y_grp[oy0 * l.ow..],
                rows: l.cog,
                cols: t,
                row_stride: p as isize,
                col_stride: 1,
            };
            let col = MatRef::row_major(&*col, l.kk, t);
            matmul_strided(y_band, w_grp, col, T::ONE, T::ZERO, threads);
        }
    }
}

/// dx = conv_transpose(dy, w), the gradient of `conv2d_fwd` with respect to x. `dx` is
/// overwritten.
pub fn conv2d_bwd_data<T: Real>(g: &ConvGeom, dy: &[T], w: &[T], dx: &mut [T]) {
    let l = Lowering::new::<T>(g);
    check_len("dy", dy.len(), g.y_len());
    check_len("w", w.len(), g.w_len());
    check_len("dx", dx.len(), g.x_len());
    if g.n == 0 {
        return;
    }
    let (per_task, gemm_threads) = l.schedule();
    dx.par_chunks_mut(per_task * l.x_img())
        .zip(dy.par_chunks(per_task * l.y_img()))
        .for_each(|(dx_run, dy_run)| {
            let mut col = vec![T::ZERO; l.col_len()];
            for (dx_img, dy_img) in dx_run
                .chunks_exact_mut(l.x_img())
                .zip(dy_run.chunks_exact(l.y_img()))
            {
                bwd_data_image(&l, dy_img, w, dx_img, &mut col, gemm_threads);
            }
        });
}

fn bwd_data_image<T: Real>(
    l: &Lowering,
    dy_img: &[T],
    w: &[T],
    dx_img: &mut [T],
    col: &mut [T],
    threads: usize,
) {
    let p = l.p();
    let x_grp_len = l.cig * l.g.h * l.g.w;
    for (grp, dx_grp) in dx_img.chunks_exact_mut(x_grp_len).enumerate() {
        let w_t = l.w_group(w, grp).t();
        let dy_grp = &dy_img[l.y_group_range(grp)];
        if l.pointwise {
            // The patch matrix is the input plane itself, so the gemm writes dx directly.
            let dy_grp = MatRef::row_major(dy_grp, l.cog, p);
            matmul(dx_grp, w_t, dy_grp, T::ONE, T::ZERO, threads);
            continue;
        }
        // col2im only adds, and pixels no window touches must still come out as zero.
        dx_grp.fill(T::ZERO);
        for (oy0, oy1) in l.bands() {
            let t = (oy1 - oy0) * l.ow;
            let col = &mut col[..l.kk * t];
            matmul(
                col,
                w_t,
                l.y_band(dy_grp, oy0, oy1),
                T::ONE,
                T::ZERO,
                threads,
            );
            col2im(l, col, oy0, oy1, dx_grp);
        }
    }
}

/// dw = sum over the batch of the correlation of x with dy, the gradient of `conv2d_fwd` with
/// respect to w. `dw` is overwritten.
///
/// Each rayon task accumulates its run of images into a private buffer and the buffers are
/// summed in task order afterwards, so the result depends only on the pool size, not on
/// scheduling.
pub fn conv2d_bwd_weights<T: Real>(g: &ConvGeom, x: &[T], dy: &[T], dw: &mut [T]) {
    let l = Lowering::new::<T>(g);
    check_len("x", x.len(), g.x_len());
    check_len("dy", dy.len(), g.y_len());
    check_len("dw", dw.len(), g.w_len());
    dw.fill(T::ZERO);
    if g.n == 0 {
        return;
    }
    let (per_task, gemm_threads) = l.schedule();
    let tasks = g.n.div_ceil(per_task);
    // The first task accumulates straight into dw; only the others need private buffers.
    let mut partials = vec![vec![T::ZERO; dw.len()]; tasks - 1];
    let mut accs: Vec<&mut [T]> = Vec::with_capacity(tasks);
    accs.push(&mut *dw);
    accs.extend(partials.iter_mut().map(Vec::as_mut_slice));
    accs.into_par_iter()
        .zip(x.par_chunks(per_task * l.x_img()))
        .zip(dy.par_chunks(per_task * l.y_img()))
        .for_each(|((acc, x_run), dy_run)| {
            let mut col = vec![T::ZERO; l.col_len()];
            for (x_img, dy_img) in x_run
                .chunks_exact(l.x_img())
                .zip(dy_run.chunks_exact(l.y_img()))
            {
                bwd_weights_image(&l, x_img, dy_img, acc, &mut col, gemm_threads);
            }
        });
    for part in &partials {
        for (d, s) in dw.iter_mut().zip(part) {
            *d += *s;
        }
    }
}

/// Adds one image's contribution to `dw`.
fn bwd_weights_image<T: Real>(
    l: &Lowering,
    x_img: &[T],
    dy_img: &[T],
    dw: &mut [T],
    col: &mut [T],
    threads: usize,
) {
    let p = l.p();
    for (grp, dw_grp) in dw.chunks_exact_mut(l.cog * l.kk).enumerate() {
        let x_grp = l.x_group(x_img, grp);
        let dy_grp = &dy_img[l.y_group_range(grp)];
        if l.pointwise {
            let x_t = MatRef::row_major(x_grp, l.cig, p).t();
            let dy_grp = MatRef::row_major(dy_grp, l.cog, p);
            matmul(dw_grp, dy_grp, x_t, T::ONE, T::ONE, threads);
            continue;
        }
        for (oy0, oy1) in l.bands() {
            let t = (oy1 - oy0) * l.ow;
            let col = &mut col[..l.kk * t];
            im2col(l, x_grp, oy0, oy1, col);
            let col_t = MatRef::row_major(&*col, l.kk, t).t();
            matmul(
                dw_grp,
                l.y_band(dy_grp, oy0, oy1),
                col_t,
                T::ONE,
                T::ONE,
                threads,
            );
        }
    }
}

fn check_layout_lens(src: usize, dst: usize, n: usize, c: usize, h: usize, w: usize) {
    let want = n * c * h * w;
    assert_eq!(
        src, want,
        "source has {src} elements, {n}x{c}x{h}x{w} needs {want}"
    );
    assert_eq!(
        dst, want,
        "destination has {dst} elements, {n}x{c}x{h}x{w} needs {want}"
    );
}

/// Reorders `[n, c, h, w]` into `[n, h, w, c]`.
pub fn nchw_to_nhwc<T: Copy>(src: &[T], n: usize, c: usize, h: usize, w: usize, dst: &mut [T]) {
    check_layout_lens(src.len(), dst.len(), n, c, h, w);
    let hw = h * w;
    if hw == 0 || c == 0 {
        return;
    }
    for (s_img, d_img) in src.chunks_exact(c * hw).zip(dst.chunks_exact_mut(c * hw)) {
        for (ch, plane) in s_img.chunks_exact(hw).enumerate() {
            for (d, s) in d_img[ch..].iter_mut().step_by(c).zip(plane) {
                *d = *s;
            }
        }
    }
}

/// Reorders `[n, h, w, c]` into `[n, c, h, w]`.
pub fn nhwc_to_nchw<T: Copy>(src: &[T], n: usize, c: usize, h: usize, w: usize, dst: &mut [T]) {
    check_layout_lens(src.len(), dst.len(), n, c, h, w);
    let hw = h * w;
    if hw == 0 || c == 0 {
        return;
    }
    for (s_img, d_img) in src.chunks_exact(c * hw).zip(dst.chunks_exact_mut(c * hw)) {
        for (ch, plane) in d_img.chunks_exact_mut(hw).enumerate() {
            for (d, s) in plane.iter_mut().zip(s_img[ch..].iter().step_by(c)) {
                *d = *s;
            }
        }
    }
}

#[cfg(test)]
#[path = "conv_tests.rs"]
mod tests;

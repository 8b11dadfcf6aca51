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
mod tests {
    use super::*;

    #[allow(clippy::too_many_arguments)]
    fn geom(
        n: usize,
        c_in: usize,
        c_out: usize,
        (h, w): (usize, usize),
        (kh, kw): (usize, usize),
        (pad_h, pad_w): (usize, usize),
        (stride_h, stride_w): (usize, usize),
        (dil_h, dil_w): (usize, usize),
        groups: usize,
    ) -> ConvGeom {
        ConvGeom {
            n,
            c_in,
            c_out,
            h,
            w,
            kh,
            kw,
            pad_h,
            pad_w,
            stride_h,
            stride_w,
            dil_h,
            dil_w,
            groups,
        }
    }

    /// Single image, single channel, square kernel: the shape of most literal tests.
    fn simple(hw: usize, k: usize, pad: usize, stride: usize, dil: usize) -> ConvGeom {
        geom(
            1,
            1,
            1,
            (hw, hw),
            (k, k),
            (pad, pad),
            (stride, stride),
            (dil, dil),
            1,
        )
    }

    fn fwd(g: &ConvGeom, x: &[f64], w: &[f64]) -> Vec<f64> {
        // NaN prefill proves the output is overwritten, not accumulated into.
        let mut y = vec![f64::NAN; g.y_len()];
        conv2d_fwd(g, x, w, &mut y);
        y
    }

    fn bwd_data(g: &ConvGeom, dy: &[f64], w: &[f64]) -> Vec<f64> {
        let mut dx = vec![f64::NAN; g.x_len()];
        conv2d_bwd_data(g, dy, w, &mut dx);
        dx
    }

    fn bwd_weights(g: &ConvGeom, x: &[f64], dy: &[f64]) -> Vec<f64> {
        let mut dw = vec![f64::NAN; g.w_len()];
        conv2d_bwd_weights(g, x, dy, &mut dw);
        dw
    }

    fn seq(len: usize) -> Vec<f64> {
        (1..=len).map(|v| v as f64).collect()
    }

    const K2: [f64; 4] = [1.0, 2.0, 3.0, 4.0];

    #[test]
    fn out_size_formula() {
        let g = geom(1, 1, 1, (56, 30), (3, 4), (1, 2), (2, 3), (1, 2), 1);
        assert_eq!(g.out_h(), (56 + 2 - 2 - 1) / 2 + 1);
        assert_eq!(g.out_w(), (30 + 4 - 6 - 1) / 3 + 1);
        // A kernel that does not fit reports zero instead of underflowing.
        assert_eq!(simple(2, 3, 0, 1, 1).out_h(), 0);
        assert!(simple(2, 3, 0, 1, 1).validate().is_err());
        assert!(
            geom(1, 3, 2, (4, 4), (1, 1), (0, 0), (1, 1), (1, 1), 2)
                .validate()
                .is_err()
        );
        assert_eq!(simple(3, 2, 0, 1, 1).flops(), 2 * 4 * 4);
    }

    #[test]
    fn fwd_literal_3x3_input_2x2_kernel() {
        // x = [1 2 3; 4 5 6; 7 8 9], w = [1 2; 3 4]
        let y = fwd(&simple(3, 2, 0, 1, 1), &seq(9), &K2);
        assert_eq!(y, [37.0, 47.0, 67.0, 77.0]);
    }

    #[test]
    fn fwd_literal_padding_1() {
        let y = fwd(&simple(3, 2, 1, 1, 1), &seq(9), &K2);
        #[rustfmt::skip]
        let want = [
            4.0, 11.0, 18.0, 9.0,
            18.0, 37.0, 47.0, 21.0,
            36.0, 67.0, 77.0, 33.0,
            14.0, 23.0, 26.0, 9.0,
        ];
        assert_eq!(y, want);
    }

    #[test]
    fn fwd_literal_stride_2() {
        // x = 1..16 as 4x4: the windows start at (0,0), (0,2), (2,0), (2,2).
        let y = fwd(&simple(4, 2, 0, 2, 1), &seq(16), &K2);
        assert_eq!(y, [44.0, 64.0, 124.0, 144.0]);
        // Stride 2 with padding 1 keeps every other output of the padded case above.
        let y = fwd(&simple(3, 2, 1, 2, 1), &seq(9), &K2);
        assert_eq!(y, [4.0, 18.0, 36.0, 77.0]);
    }

    #[test]
    fn fwd_literal_dilation_2() {
        // x = 1..25 as 5x5; taps at (0,0), (0,2), (2,0), (2,2): y = 10*x(i,j) + 82.
        let y = fwd(&simple(5, 2, 0, 1, 2), &seq(25), &K2);
        assert_eq!(
            y,
            [92.0, 102.0, 112.0, 142.0, 152.0, 162.0, 192.0, 202.0, 212.0]
        );
    }

    #[test]
    fn fwd_literal_groups_2_do_not_mix() {
        let g = geom(1, 2, 2, (3, 3), (2, 2), (0, 0), (1, 1), (1, 1), 2);
        // Channel 1 is channel 0 scaled by 100, so any leak across groups shows up at once.
        let x: Vec<f64> = seq(9)
            .into_iter()
            .chain(seq(9).iter().map(|v| 100.0 * v))
            .collect();
        let w = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let y = fwd(&g, &x, &w);
        assert_eq!(
            y,
            [37.0, 47.0, 67.0, 77.0, 8500.0, 11100.0, 16300.0, 18900.0]
        );
    }

    #[test]
    fn fwd_literal_pointwise() {
        // 1x1 stride 1 pad 0 skips im2col: y = W x, per pixel.
        let g = geom(1, 2, 3, (2, 2), (1, 1), (0, 0), (1, 1), (1, 1), 1);
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let w = [1.0, 0.0, 0.0, 1.0, 1.0, -1.0];
        let y = fwd(&g, &x, &w);
        assert_eq!(
            y,
            [
                1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, -4.0, -4.0, -4.0, -4.0
            ]
        );
    }

    #[test]
    fn bwd_data_literal() {
        // Each dy(i,j) scatters dy(i,j) * w into the window it came from.
        let dx = bwd_data(&simple(3, 2, 0, 1, 1), &K2, &K2);
        assert_eq!(dx, [1.0, 4.0, 4.0, 6.0, 20.0, 16.0, 9.0, 24.0, 16.0]);
        // Stride 2, padding 1: windows start at (-1,-1), (-1,1), (1,-1), (1,1).
        let dx = bwd_data(&simple(3, 2, 1, 2, 1), &K2, &K2);
        assert_eq!(dx, [4.0, 6.0, 8.0, 6.0, 4.0, 8.0, 12.0, 12.0, 16.0]);
    }

    #[test]
    fn bwd_weights_literal() {
        // Two images, the second twice the first, so dw is three times one image's share.
        let g = geom(2, 1, 1, (3, 3), (2, 2), (0, 0), (1, 1), (1, 1), 1);
        let x: Vec<f64> = seq(9)
            .into_iter()
            .chain(seq(9).iter().map(|v| 2.0 * v))
            .collect();
        let dy = [K2, K2].concat();
        let dw = bwd_weights(&g, &x, &dy);
        assert_eq!(dw, [111.0, 141.0, 201.0, 231.0]);
        let dw = bwd_weights(&simple(3, 2, 1, 2, 1), &seq(9), &K2);
        assert_eq!(dw, [20.0, 36.0, 36.0, 64.0]);
    }

    /// Deterministic values in [-1, 1) without pulling a RNG crate into the tests.
    fn lcg(seed: u64, len: usize) -> Vec<f64> {
        let mut s = seed ^ 0x9E37_79B9_7F4A_7C15;
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }

    /// Direct definition of all three directions, one multiply-add per (output, tap) pair.
    fn naive(g: &ConvGeom, x: &[f64], w: &[f64], dy: &[f64]) -> [Vec<f64>; 3] {
        let (oh, ow) = (g.out_h(), g.out_w());
        let (cig, cog) = (g.c_in / g.groups, g.c_out / g.groups);
        let mut y = vec![0.0; g.y_len()];
        let mut dx = vec![0.0; g.x_len()];
        let mut dw = vec![0.0; g.w_len()];
        for b in 0..g.n {
            for co in 0..g.c_out {
                let grp = co / cog;
                for oy in 0..oh {
                    for ox in 0..ow {
                        let yi = ((b * g.c_out + co) * oh + oy) * ow + ox;
                        for ci in 0..cig {
                            for ki in 0..g.kh {
                                for kj in 0..g.kw {
                                    let iy = (oy * g.stride_h + ki * g.dil_h) as isize
                                        - g.pad_h as isize;
                                    let ix = (ox * g.stride_w + kj * g.dil_w) as isize
                                        - g.pad_w as isize;
                                    if iy < 0 || ix < 0 || iy >= g.h as isize || ix >= g.w as isize
                                    {
                                        continue;
                                    }
                                    let c = grp * cig + ci;
                                    let xi =
                                        ((b * g.c_in + c) * g.h + iy as usize) * g.w + ix as usize;
                                    let wi = ((co * cig + ci) * g.kh + ki) * g.kw + kj;
                                    y[yi] += x[xi] * w[wi];
                                    dx[xi] += dy[yi] * w[wi];
                                    dw[wi] += dy[yi] * x[xi];
                                }
                            }
                        }
                    }
                }
            }
        }
        [y, dx, dw]
    }

    /// Norm-wise relative comparison: element-wise relative error is meaningless where
    /// cancellation makes the reference tiny.
    fn assert_close<T: Real>(what: &str, got: &[T], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        let scale = want.iter().fold(f64::MIN_POSITIVE, |s, v| s.max(v.abs()));
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let g = g.to_f64();
            assert!(
                (g - w).abs() <= tol * scale,
                "{what}[{i}]: got {g}, want {w} (scale {scale})"
            );
        }
    }

    fn random_geoms() -> Vec<ConvGeom> {
        vec![
            // non-square kernel, mixed stride / dilation / one-sided padding
            geom(2, 3, 4, (7, 9), (3, 2), (1, 0), (2, 1), (1, 2), 1),
            // 1x3 kernel, wide stride, padding wider than the kernel reach
            geom(3, 4, 6, (8, 5), (1, 3), (0, 2), (1, 3), (1, 1), 2),
            // kernel as large as the image: a single output pixel
            geom(1, 6, 3, (5, 5), (5, 5), (0, 0), (1, 1), (1, 1), 3),
            // depthwise with dilation and asymmetric stride
            geom(2, 2, 2, (6, 7), (3, 3), (2, 3), (3, 2), (2, 1), 2),
            // pointwise fast path
            geom(2, 5, 7, (4, 6), (1, 1), (0, 0), (1, 1), (1, 1), 1),
            // 1x1 with stride: must not take the fast path
            geom(1, 4, 4, (7, 7), (1, 1), (0, 0), (2, 2), (1, 1), 4),
            // kernel larger than the input, only reachable through padding
            geom(2, 2, 3, (3, 2), (4, 3), (1, 1), (1, 1), (1, 1), 1),
            // odd batch and big enough for several output-row bands per image
            geom(5, 8, 4, (40, 33), (3, 3), (1, 1), (1, 1), (1, 1), 1),
            // many channels: a single output row exceeds the band budget
            geom(1, 64, 8, (5, 300), (3, 3), (1, 1), (1, 1), (1, 1), 2),
        ]
    }

    fn random_case(g: &ConvGeom, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        (
            lcg(seed, g.x_len()),
            lcg(seed + 1, g.w_len()),
            lcg(seed + 2, g.y_len()),
        )
    }

    #[test]
    fn matches_naive_f64_all_directions() {
        for (i, g) in random_geoms().iter().enumerate() {
            let (x, w, dy) = random_case(g, 10 * i as u64);
            let [y_ref, dx_ref, dw_ref] = naive(g, &x, &w, &dy);
            assert_close(&format!("fwd {g:?}"), &fwd(g, &x, &w), &y_ref, 1e-9);
            assert_close(
                &format!("bwd_data {g:?}"),
                &bwd_data(g, &dy, &w),
                &dx_ref,
                1e-9,
            );
            assert_close(
                &format!("bwd_weights {g:?}"),
                &bwd_weights(g, &x, &dy),
                &dw_ref,
                1e-9,
            );
        }
    }

    #[test]
    fn matches_naive_f32_all_directions() {
        let to32 = |v: &[f64]| v.iter().map(|&v| v as f32).collect::<Vec<f32>>();
        for (i, g) in random_geoms().iter().enumerate() {
            let (x, w, dy) = random_case(g, 100 + i as u64);
            // The reference runs on the f32-rounded inputs so only the arithmetic differs.
            let (x, w, dy) = (to32(&x), to32(&w), to32(&dy));
            let up = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<f64>>();
            let [y_ref, dx_ref, dw_ref] = naive(g, &up(&x), &up(&w), &up(&dy));
            let mut y = vec![f32::NAN; g.y_len()];
            conv2d_fwd(g, &x, &w, &mut y);
            assert_close("fwd f32", &y, &y_ref, 1e-4);
            let mut dx = vec![f32::NAN; g.x_len()];
            conv2d_bwd_data(g, &dy, &w, &mut dx);
            assert_close("bwd_data f32", &dx, &dx_ref, 1e-4);
            let mut dw = vec![f32::NAN; g.w_len()];
            conv2d_bwd_weights(g, &x, &dy, &mut dw);
            assert_close("bwd_weights f32", &dw, &dw_ref, 1e-4);
        }
    }

    #[test]
    fn pool_size_does_not_change_results() {
        // One thread (sequential), and three threads over an odd batch (uneven image runs).
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for (i, g) in random_geoms().iter().enumerate() {
                let (x, w, dy) = random_case(g, 1000 + i as u64);
                let [y_ref, dx_ref, dw_ref] = naive(g, &x, &w, &dy);
                pool.install(|| {
                    assert_close("fwd", &fwd(g, &x, &w), &y_ref, 1e-9);
                    assert_close("bwd_data", &bwd_data(g, &dy, &w), &dx_ref, 1e-9);
                    assert_close("bwd_weights", &bwd_weights(g, &x, &dy), &dw_ref, 1e-9);
                });
            }
        }
    }

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(a, b)| a * b).sum()
    }

    #[test]
    fn adjoint_identity() {
        // <conv(x, w), dy> = <x, bwd_data(dy, w)> = <w, bwd_weights(x, dy)>: all three are the
        // same trilinear sum, so this checks the directions against each other, independently
        // of the naive reference.
        for (i, g) in random_geoms().iter().enumerate() {
            let (x, w, dy) = random_case(g, 7 + 3 * i as u64);
            let via_y = dot(&fwd(g, &x, &w), &dy);
            let via_x = dot(&x, &bwd_data(g, &dy, &w));
            let via_w = dot(&w, &bwd_weights(g, &x, &dy));
            // Scale by the sum of absolute products so cancellation cannot hide an error.
            let abs = |v: &[f64]| v.iter().map(|v| v.abs()).collect::<Vec<_>>();
            let bound = dot(&fwd(g, &abs(&x), &abs(&w)), &abs(&dy)) * 1e-12;
            assert!((via_y - via_x).abs() <= bound, "{g:?}: {via_y} vs {via_x}");
            assert!((via_y - via_w).abs() <= bound, "{g:?}: {via_y} vs {via_w}");
        }
    }

    #[test]
    fn empty_batch_is_a_no_op() {
        let g = geom(0, 2, 2, (3, 3), (2, 2), (0, 0), (1, 1), (1, 1), 1);
        let mut y: Vec<f64> = Vec::new();
        conv2d_fwd(&g, &[], &[0.0; 16], &mut y);
        let mut dw = vec![f64::NAN; g.w_len()];
        conv2d_bwd_weights(&g, &[], &[], &mut dw);
        assert_eq!(dw, vec![0.0; 16]);
    }

    #[test]
    #[should_panic(expected = "groups=2 must divide")]
    fn invalid_groups_panic() {
        let g = geom(1, 3, 2, (3, 3), (1, 1), (0, 0), (1, 1), (1, 1), 2);
        let mut y = vec![0.0f64; 18];
        conv2d_fwd(&g, &[0.0; 27], &[0.0; 2], &mut y);
    }

    #[test]
    fn layout_literal() {
        // n=1, c=2, h=1, w=3: channel planes [0 1 2] and [10 11 12] interleave per pixel.
        let nchw = [0, 1, 2, 10, 11, 12];
        let mut nhwc = [0; 6];
        nchw_to_nhwc(&nchw, 1, 2, 1, 3, &mut nhwc);
        assert_eq!(nhwc, [0, 10, 1, 11, 2, 12]);
        let mut back = [0; 6];
        nhwc_to_nchw(&nhwc, 1, 2, 1, 3, &mut back);
        assert_eq!(back, nchw);
    }

    #[test]
    fn layout_round_trip() {
        let (n, c, h, w) = (3, 5, 4, 7);
        let src: Vec<u32> = (0..(n * c * h * w) as u32).collect();
        let mut nhwc = vec![0; src.len()];
        nchw_to_nhwc(&src, n, c, h, w, &mut nhwc);
        // Spot-check the index mapping, not just that the round trip is the identity.
        let (b, ch, y, x) = (2, 3, 1, 5);
        assert_eq!(
            nhwc[((b * h + y) * w + x) * c + ch],
            src[((b * c + ch) * h + y) * w + x]
        );
        let mut back = vec![0; src.len()];
        nhwc_to_nchw(&nhwc, n, c, h, w, &mut back);
        assert_eq!(back, src);
    }
}

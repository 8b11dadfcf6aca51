//! Tests of the CPU convolution: literal hand-computed cases, a naive reference on random
//! geometries, the adjoint identity and layout conversions.

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
                                let iy =
                                    (oy * g.stride_h + ki * g.dil_h) as isize - g.pad_h as isize;
                                let ix =
                                    (ox * g.stride_w + kj * g.dil_w) as isize - g.pad_w as isize;
                                if iy < 0 || ix < 0 || iy >= g.h as isize || ix >= g.w as isize {
                                    continue;
                                }
                                let c = grp * cig + ci;
                                let xi = ((b * g.c_in + c) * g.h + iy as usize) * g.w + ix as usize;
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

//! Throughput of the CPU reference convolution on a ResNet-style layer.
//!
//! Throughput is declared as the FLOP count, so criterion's "elem/s" reads as FLOP/s.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rocsweep::cpu::conv::{ConvGeom, conv2d_bwd_data, conv2d_bwd_weights, conv2d_fwd};

const GEOM: ConvGeom = ConvGeom {
    n: 8,
    c_in: 64,
    c_out: 128,
    h: 56,
    w: 56,
    kh: 3,
    kw: 3,
    pad_h: 1,
    pad_w: 1,
    stride_h: 1,
    stride_w: 1,
    dil_h: 1,
    dil_w: 1,
    groups: 1,
};

/// Deterministic data in [-1, 1); the values do not matter for timing, only that they are not
/// denormal or zero.
fn data(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761);
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

fn conv_ref(c: &mut Criterion) {
    let g = GEOM;
    let x = data(g.x_len(), 1);
    let w = data(g.w_len(), 2);
    let dy = data(g.y_len(), 3);
    let mut y = vec![0.0f32; g.y_len()];
    let mut dx = vec![0.0f32; g.x_len()];
    let mut dw = vec![0.0f32; g.w_len()];

    let mut group = c.benchmark_group("conv2d_f32_n8_64to128_56x56_3x3");
    group.throughput(Throughput::Elements(g.flops()));
    // Each iteration is a few hundred milliseconds; the default 100 samples would take minutes.
    group.sample_size(10);
    group.bench_function("fwd", |b| {
        b.iter(|| conv2d_fwd(&g, black_box(&x), black_box(&w), black_box(&mut y)));
    });
    group.bench_function("bwd_data", |b| {
        b.iter(|| conv2d_bwd_data(&g, black_box(&dy), black_box(&w), black_box(&mut dx)));
    });
    group.bench_function("bwd_weights", |b| {
        b.iter(|| conv2d_bwd_weights(&g, black_box(&x), black_box(&dy), black_box(&mut dw)));
    });
    group.finish();
}

criterion_group!(benches, conv_ref);
criterion_main!(benches);

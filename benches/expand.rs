//! Expanding a 1,000,000-case sweep into cases (filters applied, problems built, ids hashed):
//! target under 1 s, with memory flat because cases are streamed, never collected.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

/// 5 x 100 x 100 x 20 = 1,000,000 combinations; the filter drops none but is evaluated on each.
const MILLION: &str = r#"
name = "million"
op = "conv2d"
drop = ["c_in > 1000000 and h < 0"]

[axes]
n = [1, 2, 4, 8, 16]
c_in = "range(1..=100)"
c_out = "range(1..=100)"
h = "range(8..=1024, step=51)"
"#;

fn bench(c: &mut Criterion) {
    let sweep = match rocsweep::spec::load_str("million.toml", MILLION, &[]) {
        Ok(s) => s,
        Err(e) => panic!("{}", e.render()),
    };
    assert_eq!(sweep.product_size(), 1_000_000);
    let mut g = c.benchmark_group("expand");
    g.sample_size(10);
    g.bench_function("cases_1M", |b| {
        b.iter(|| {
            sweep
                .cases()
                .filter_map(Result::ok)
                .map(|case| black_box(case.id.len()))
                .sum::<usize>()
        })
    });
    g.bench_function("combinations_1M", |b| {
        b.iter(|| {
            sweep
                .combinations()
                .map(|c| black_box(c.len()))
                .sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

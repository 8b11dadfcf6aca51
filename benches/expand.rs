//! Expanding a 1,000,000-case sweep into cases (ids hashed, problems built, filter applied):
//! target under 1 s, with memory flat because cases are streamed.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

const MILLION: &str = r#"
name = "million"
op = "conv2d"
[axes]
n = [1, 2, 4, 8, 16]
c_in = "range(1..=100)"
c_out = "range(1..=100)"
h = "range(8..=1024, step=51)"
drop = ["c_in > 1000000"]
"#;

fn bench(c: &mut Criterion) {
    let text = MILLION.replace("drop = [\"c_in > 1000000\"]\n", "");
    let text = format!("{text}drop = [\"c_in > 1000000\"]\n");
    // `drop` must be a top-level key, so it goes before [axes] in a real file; move it there.
    let text = text.replace("[axes]\n", "").replacen(
        "op = \"conv2d\"\n",
        "op = \"conv2d\"\ndrop = [\"c_in > 1000000\"]\n[axes]\n",
        1,
    );
    let text = text
        .trim_end()
        .trim_end_matches("drop = [\"c_in > 1000000\"]")
        .to_string();
    let sweep = match rocsweep::spec::load_str("million.toml", &text, &[]) {
        Ok(s) => s,
        Err(e) => panic!("{}", e.render()),
    };
    assert_eq!(sweep.product_size(), 5 * 100 * 100 * 20);
    let mut g = c.benchmark_group("expand");
    g.sample_size(10);
    g.bench_function("cases_1M", |b| {
        b.iter(|| {
            let mut n = 0u64;
            for case in sweep.cases() {
                if let Ok(case) = case {
                    n += black_box(case.id.len()) as u64;
                }
            }
            n
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

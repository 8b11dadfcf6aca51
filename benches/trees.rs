//! Finding TheRock's tree in a site-packages with thousands of `_rocm_sdk_*` directories (issue
//! 40, D7): linear in their number (10k and 20k took 6.8 s and 36 s per launch when it was
//! quadratic; target: 20k within twice 10k's time).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::Path;

/// A venv whose site-packages holds a core package with a HIP runtime file and `n` other
/// `_rocm_sdk_*` directories.
fn venv(root: &Path, n: usize) {
    let site = root.join("lib/python3.12/site-packages");
    let lib = site.join("_rocm_sdk_core/lib");
    std::fs::create_dir_all(&lib).expect("mkdir");
    std::fs::write(lib.join("libamdhip64.so.7"), b"").expect("write");
    for i in 0..n {
        std::fs::create_dir(site.join(format!("_rocm_sdk_x{i:05}"))).expect("mkdir");
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("therock_tree");
    g.sample_size(10);
    for n in [10_000, 20_000] {
        let tmp = tempfile::tempdir().expect("tempdir");
        venv(tmp.path(), n);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let trees = rocsweep::rocm_tree::tree::python_trees(black_box(tmp.path()));
                assert_eq!(trees.len(), 1);
                assert_eq!(trees[0].roots.len(), n + 1);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

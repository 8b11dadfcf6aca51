#!/usr/bin/env python3
"""Times the GEMM and convolution shapes of sweeps/h200-gemm.toml and sweeps/h200-conv.toml
through PyTorch (cuBLASLt for matmul, cuDNN with benchmark mode for conv) on the same GPU, with
CUDA events, median of repeated calls. Writes one CSV row per shape. TF32 is off for f32, as in
rocsweep's f32 cases (its `tf32` GEMM cases set allow_tf32 here too).

usage: torch_peer.py OUT.csv [--only gemm|conv]

Conv rows carry the cuDNN version PyTorch ran (its own bundled copy) and its benchmark_limit (how
many engine configurations cudnn-benchmark times per shape).
"""
import csv
import sys

import torch

from peer_times import per_call_ms

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def time_ms(fn, warmup=5, reps=30):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    return per_call_ms(fn, reps)


def gemm_rows():
    shapes = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
              (4096, 14336, 4096), (16384, 4096, 14336), (8192, 8192, 1024)]
    for (m, n, k) in shapes:
        for dtype, compute in [("bf16", "f32"), ("f16", "f32"), ("f32", "f32"), ("f32", "tf32")]:
            torch.backends.cuda.matmul.allow_tf32 = compute == "tf32"
            a = torch.rand(m, k, device="cuda", dtype=DT[dtype]) - 0.5
            b = torch.rand(k, n, device="cuda", dtype=DT[dtype]) - 0.5
            ms = time_ms(lambda: torch.matmul(a, b))
            yield {"op": "gemm", "shape": f"m={m};n={n};k={k}", "dtype": dtype, "compute": compute,
                   "torch_ms": f"{ms:.6f}", "torch_gflops": f"{2 * m * n * k / ms / 1e6:.1f}"}


def conv_rows():
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    cudnn = str(torch.backends.cudnn.version())
    limit = str(getattr(torch.backends.cudnn, "benchmark_limit", ""))
    for (ci, co) in [(3, 16), (16, 32), (32, 64), (64, 128), (128, 256)]:
        for hw in [32, 64, 128, 224]:
            for dtype in ["f32", "f16", "bf16"]:
                x = torch.rand(16, ci, hw, hw, device="cuda", dtype=DT[dtype]) - 0.5
                conv = torch.nn.Conv2d(ci, co, 3, padding=1, bias=False).to("cuda", DT[dtype])
                with torch.no_grad():
                    ms = time_ms(lambda: conv(x))
                flops = 2 * 16 * co * hw * hw * ci * 9
                yield {"op": "conv2d", "shape": f"c_in={ci};c_out={co};h={hw}", "dtype": dtype, "compute": "f32",
                       "torch_ms": f"{ms:.6f}", "torch_gflops": f"{flops / ms / 1e6:.1f}",
                       "cudnn": cudnn, "benchmark_limit": limit}


def main():
    out = sys.argv[1]
    only = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--only" else None
    if len(sys.argv) > 2 and only not in ("gemm", "conv"):
        sys.exit("usage: torch_peer.py OUT.csv [--only gemm|conv]")
    fields = ["op", "shape", "dtype", "compute", "torch_ms", "torch_gflops", "cudnn", "benchmark_limit"]
    rows = []
    if only in (None, "gemm"):
        rows.append(gemm_rows())
    if only in (None, "conv"):
        rows.append(conv_rows())
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for row in (r for gen in rows for r in gen):
            w.writerow(row)
            f.flush()
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"benchmark_limit {getattr(torch.backends.cudnn, 'benchmark_limit', '?')}, {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()

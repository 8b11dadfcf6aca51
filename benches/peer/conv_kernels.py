#!/usr/bin/env python3
"""The kernels PyTorch's cuDNN pick runs for one forward convolution of a rocsweep run, for Nsight
Compute: cuDNN benchmark mode (TF32 off) chooses, then 20 calls inside an NVTX range named
`timed`, so that `ncu --nvtx --nvtx-include timed/` profiles only the chosen kernels, never the
benchmark's trials. Prints the kernels one call runs (torch.profiler) as `KERNELS <names>`, and
as `OUTPUTS <addresses>` where the outputs of 4 calls captured into one graph the way
peer_times.py captures them (each result dropped at once) lie: one address means the graph writes
one buffer, as rocsweep's does.

usage: conv_kernels.py RUN_DIR KEY_PART...
       KEY_PART: key=value pairs of peer_times' conv2d key (e.g. c_in=64 c_out=64 h=56 kernel=1
       stride=1 dtype=f16); the first conv2d row of RUN_DIR's results.csv matching all of them.
"""
import csv
import sys

import torch

from peer_times import capture, conv_fn, kernels


def output_addresses(fn, calls):
    """The output address of each of `calls` calls captured into one graph by peer_times'
    `capture` (each result dropped at once, as there)."""
    seen = []
    capture(lambda: seen.append(fn().data_ptr()), calls)
    return seen[-calls:]


def main():
    run_dir, parts = sys.argv[1], dict(p.split("=", 1) for p in sys.argv[2:])
    rows = [r for r in csv.DictReader(open(f"{run_dir}/results.csv"))
            if r["op"] == "conv2d" and all(r.get(k) == v for k, v in parts.items())]
    if not rows:
        raise SystemExit(f"no conv2d row of {run_dir} matches {parts}")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    with torch.no_grad():
        fn = conv_fn(rows[0])
        for _ in range(5):  # benchmark mode chooses on the first call
            fn()
        torch.cuda.synchronize()
        print("KERNELS", kernels(fn), flush=True)
        print("OUTPUTS", " ".join(hex(p) for p in output_addresses(fn, 4)), flush=True)
        torch.cuda.nvtx.range_push("timed")
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    main()

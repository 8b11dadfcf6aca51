#!/usr/bin/env python3
"""Issue 29 point 6: is the same GEMM faster in the first second after the card has been idle?
For each idle length D (the host sleeps, the card has nothing queued), the same torch.mm runs back
to back for RUN_S seconds with an event pair around every call; prints the per-call device times
in order, the mean of the first 0.5 s and of the last 0.5 s, and their ratio. The operands and
the output stay where they are, so only the card's state changes between rows. The host reads
the events every 8 calls, which drains the queue: every 9th call starts on an idle card (the
first window and the last alike).
usage: idle_probe.py [RUN_S]"""
import statistics
import sys
import time

import torch

SHAPES = [("8192^3 f32", 8192, 8192, 8192, False), ("4096x14336x4096 f32", 4096, 14336, 4096, False),
          ("8192^3 tf32", 8192, 8192, 8192, True)]
IDLE_S = [0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 0.0]


def series(fn, run_s):
    """Per-call device ms of back-to-back calls for run_s seconds of device time."""
    evs = []
    total, n = 0.0, 0
    while True:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        evs.append((a, b))
        n += 1
        if n % 8 == 0:
            evs[-1][1].synchronize()
            total = sum(x.elapsed_time(y) for x, y in evs) / 1e3
            if total >= run_s:
                break
    torch.cuda.synchronize()
    return [x.elapsed_time(y) for x, y in evs]


def main():
    run_s = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    for name, m, n, k, tf32 in SHAPES:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        g = torch.Generator(device="cuda").manual_seed(1)
        x = torch.rand(m, k, device="cuda", generator=g) * 2 - 1
        y = torch.rand(k, n, device="cuda", generator=g) * 2 - 1
        c = torch.empty(m, n, device="cuda")
        fn = lambda: torch.mm(x, y, out=c)  # noqa: E731
        series(fn, 0.5)
        for idle in IDLE_S:
            torch.cuda.synchronize()
            time.sleep(idle)
            ts = series(fn, run_s)
            acc, first = 0.0, []
            for t in ts:
                if acc >= 500:
                    break
                first.append(t)
                acc += t
            acc, last = 0.0, []
            for t in reversed(ts):
                if acc >= 500:
                    break
                last.append(t)
                acc += t
            f, l_ = statistics.mean(first), statistics.mean(last)
            head = " ".join(f"{t:.3f}" for t in ts[:12])
            print(f"{name} idle {idle:3.1f} s: {len(ts)} calls, first 0.5 s mean {f:.4f} ms, last 0.5 s "
                  f"{l_:.4f} ms, first/last {f / l_:.4f}; median {statistics.median(ts):.4f}; head {head}",
                  flush=True)
        del x, y, c
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

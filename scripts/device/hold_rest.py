#!/usr/bin/env python3
"""Does a rest before each sample make a card at its power limit read faster? The same torch
matmul (8192^3, f32 and TF32) timed as rocsweep's torch worker times it, k calls queued behind
torch.cuda._sleep, with two spin lengths in alternation:
  long:  2 * k * the call's device time (the worker's hold before this fix: the card rests twice
         as long as it works before every sample);
  short: 2 * k * the host time to queue one call (the worker's hold after it, like rocsweep's
         own timer, whose kernel is released as soon as the calls are queued).
Prints the median per-call time of each, and long / short.
usage: hold_rest.py [SAMPLES]"""
import statistics
import sys
import time

import torch


def main():
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
    a0, b0 = ev(), ev()
    torch.cuda._sleep(1000)
    a0.record()
    torch.cuda._sleep(2_000_000)
    b0.record()
    b0.synchronize()
    cycles_per_s = 2_000_000 / (a0.elapsed_time(b0) / 1e3)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        g = torch.Generator(device="cuda").manual_seed(1)
        x = torch.rand(8192, 8192, device="cuda", generator=g) * 2 - 1
        y = torch.rand(8192, 8192, device="cuda", generator=g) * 2 - 1
        fn = lambda: torch.matmul(x, y)  # noqa: E731
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        a, b = ev(), ev()
        t0 = time.perf_counter()
        a.record()
        fn()
        b.record()
        launch = time.perf_counter() - t0
        b.synchronize()
        call = a.elapsed_time(b) / 1e3
        k = max(1, int(0.02 / call))
        holds = {"long": 2.0 * k * call, "short": 100e-6 + 2.0 * k * max(launch, 5e-6)}
        got = {"long": [], "short": []}
        for i in range(2 * samples):
            name = ("long", "short")[i % 2]
            held, a, b = ev(), ev(), ev()
            torch.cuda._sleep(int(holds[name] * cycles_per_s))
            held.record()
            a.record()
            for _ in range(k):
                fn()
            b.record()
            late = not held.query()
            b.synchronize()
            if late:
                got[name].append(a.elapsed_time(b) / k)
        med = {n: statistics.median(v) for n, v in got.items() if v}
        print(
            f"8192^3 {'tf32' if tf32 else 'f32 '} k={k} hold long {holds['long']*1e3:.2f} ms, "
            f"short {holds['short']*1e3:.3f} ms: median long {med.get('long', float('nan')):.4f} ms "
            f"({len(got['long'])}), short {med.get('short', float('nan')):.4f} ms ({len(got['short'])}), "
            f"long/short {med.get('long', float('nan')) / med.get('short', float('nan')):.4f}"
        )


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Issue 29 point 6: does the f32 GEMM's time on an H100 depend on where its operands lie?
The same torch.mm (TF32 off) on the same input bytes, with A, B and C placed at P different
offsets inside one device slab (gaps drawn in 2 MiB steps, seeded), each placement timed as
rocsweep's torch worker times a call: k calls queued behind torch.cuda._sleep, median of S samples.
Placement 0 is timed again at the end, so a drift of the card is told from a placement effect.
Prints one line per placement (offsets in MiB, median ms) and, per shape, the spread.
usage: place_probe.py [PLACEMENTS] [SAMPLES]"""
import random
import statistics
import sys
import time

import torch

MIB = 1 << 20
SHAPES = [(8192, 8192, 8192), (4096, 14336, 4096)]


def cycles_per_second():
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    a.record()
    torch.cuda._sleep(2_000_000)
    b.record()
    b.synchronize()
    return 2_000_000 / (a.elapsed_time(b) / 1e3)


def timed(fn, samples, cps):
    """Median device ms per call, k calls per sample behind a spin (launch-free)."""
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    a.record()
    fn()
    b.record()
    launch = time.perf_counter() - t0
    b.synchronize()
    k = max(1, int(0.02 / (a.elapsed_time(b) / 1e3)))
    got = []
    while len(got) < samples:
        held = torch.cuda.Event(enable_timing=True)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(int((100e-6 + 2.0 * k * max(launch, 5e-6)) * cps))
        held.record()
        a.record()
        for _ in range(k):
            fn()
        b.record()
        late = not held.query()
        b.synchronize()
        if late:
            got.append(a.elapsed_time(b) / k)
        else:
            launch *= 4
    return statistics.median(got)


def main():
    placements = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    torch.backends.cuda.matmul.allow_tf32 = False
    cps = cycles_per_second()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    rng = random.Random(29)
    for m, n, k in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(1)
        x = torch.rand(m, k, device="cuda", generator=g) * 2 - 1
        y = torch.rand(k, n, device="cuda", generator=g) * 2 - 1
        sizes = [m * k * 4, k * n * 4, m * n * 4]
        room = 1536 * MIB
        slab = torch.empty((sum(sizes) + room) // 4, dtype=torch.float32, device="cuda")
        base = slab.data_ptr()
        default = timed(lambda: torch.mm(x, y), samples, cps)
        print(f"{m}x{n}x{k} f32 default allocator: {default:.4f} ms", flush=True)
        plans = []
        for _ in range(placements):
            gaps = sorted(rng.randrange(0, room // (2 * MIB)) * 2 * MIB for _ in range(3))
            gaps = [gaps[0], gaps[1] - gaps[0], gaps[2] - gaps[1]]
            order = rng.sample(range(3), 3)
            offs, at = [0, 0, 0], 0
            for slot, gap in zip(order, gaps):
                at += gap
                offs[slot] = at
                at += sizes[slot]
            plans.append(offs)
        times = []
        for i, offs in enumerate(plans + [plans[0]]):
            a = slab[offs[0] // 4 : (offs[0] + sizes[0]) // 4].view(m, k)
            b = slab[offs[1] // 4 : (offs[1] + sizes[1]) // 4].view(k, n)
            c = slab[offs[2] // 4 : (offs[2] + sizes[2]) // 4].view(m, n)
            a.copy_(x)
            b.copy_(y)
            t = timed(lambda: torch.mm(a, b, out=c), samples, cps)
            times.append(t)
            mib = "/".join(f"{o // MIB}" for o in offs)
            label = "again 0" if i == len(plans) else f"place {i}"
            print(f"{m}x{n}x{k} {label:8} A/B/C at MiB {mib:16} (base {base % (64 * MIB) // MIB} mod 64): {t:.4f} ms", flush=True)
        t = times[:-1]
        print(
            f"{m}x{n}x{k} f32 over {len(t)} placements: min {min(t):.4f} median {statistics.median(t):.4f} "
            f"max {max(t):.4f} ms, max/min {max(t) / min(t):.4f}; placement 0 first/again "
            f"{times[0]:.4f}/{times[-1]:.4f}; default allocator {default:.4f}",
            flush=True,
        )
        del slab, x, y
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

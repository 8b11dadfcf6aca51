#!/bin/sh
# rocsweep-env.sh: environment recommended by `rocsweep recommend` from run h200-gemm-placebo-1 (sweep h200-gemm-placebo, sha256 18e15f0735fd),
# backend cuda on NVIDIA H200 (sm_90), host vm (Ubuntu 24.04.3 LTS, kernel 6.18.44-fc-v657-gpu), started 2026-11-23T22:33:25.706334510+00:00.
# Install: sudo install -m 644 rocsweep-env.sh /etc/profile.d/rocsweep-env.sh
# It applies to every login shell; on a machine with several GPUs, guard it with a check for this card.
#
# Ranked 1 of 3: 0 failures, 24 of 24 units ok.

# PLACEBO: no measurable effect: no status changed and no speed difference beyond noise; not exported (values a, b, c; 72 pairs of units timed, 0 called faster or slower, library choice changed in 0)

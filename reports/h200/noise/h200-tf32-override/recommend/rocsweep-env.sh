#!/bin/sh
# rocsweep-env.sh: environment recommended by `rocsweep recommend` from run h200-tf32-override (sweep h200-tf32-override, sha256 7736608f9d47),
# backend cuda on NVIDIA H200 (sm_90), host vm (Ubuntu 24.04.3 LTS, kernel 6.18.44-fc-v657-gpu), started 2026-11-23T22:33:12.986758257+00:00.
# Install: sudo install -m 644 rocsweep-env.sh /etc/profile.d/rocsweep-env.sh
# It applies to every login shell; on a machine with several GPUs, guard it with a check for this card.
#
# Ranked 1 of 2: 0 failures, 4 of 4 units ok.

# NVIDIA_TF32_OVERRIDE=0: 0 failures / 4 units vs 2 failures (2 mismatch) / 4 units with =1
export NVIDIA_TF32_OVERRIDE=0

#!/bin/sh
# rocsweep-env.sh: environment recommended by `rocsweep recommend` from run conv2d-all (sweep import-conv2d, sha256 960920cd5162),
# backend cuda on NVIDIA H200 (sm_90), host vm (Ubuntu 24.04.3 LTS, kernel 6.18.44-fc-v657-gpu), started 2026-11-24T01:48:34.761471277+00:00.
# Install: sudo install -m 644 rocsweep-env.sh /etc/profile.d/rocsweep-env.sh
# It applies to every login shell; on a machine with several GPUs, guard it with a check for this card.
#
# Ranked 1 of 1: 0 failures, 367 of 509 units ok.
# The sweep set no environment variables: nothing to export.

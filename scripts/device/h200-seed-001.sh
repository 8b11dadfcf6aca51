#!/usr/bin/env bash
# Issue 45 on an NVIDIA GPU in one device command, from the repository root with the release
# binary carried in as target/carry/after/rocsweep(.xz): seed 001's sweep (with the batch path:
# shared memory, a DataLoader's first batch with pin_memory off and on, accelerate's
# send_to_device) over cuda + torch, one trial, and its which-layer table.
# Everything lands in $OUT; the table on stdout.
set -u
f=target/carry/after/rocsweep
if [ ! -x "$f" ] && [ -f "$f.xz" ]; then
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$f.xz" "$f" &&
    chmod +x "$f" || exit 1
fi
export ROCSWEEP_PYTHON=$(command -v python3)
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__)" > "$OUT/versions.txt" 2>&1
python3 -c "import accelerate; print('accelerate', accelerate.__version__)" >> "$OUT/versions.txt" 2>&1
timeout 400 "$f" run sweeps/seed-001-to-device.toml --backend cuda,torch --trials 1 --quiet \
  --out "$OUT/seed-001" > "$OUT/seed-001.log" 2>&1
echo "rc $?" >> "$OUT/seed-001.log"
sed -n '/^## Which layer fails/,/^### /p' "$OUT/seed-001/summary.md" | grep -v '^### ' > "$OUT/which-layer.md"
cat "$OUT/which-layer.md" | cut -c1-220
# What comes back: the table and the run (less its worker logs and pictures) in one archive.
tar czf "$OUT/seed-001.tgz" -C "$OUT" --exclude=workers --exclude='*.png' --exclude='*.svg' --exclude=report.html seed-001
rm -rf "$OUT/seed-001"

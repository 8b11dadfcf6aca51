#!/usr/bin/env bash
# The second device command of scripts/device/h100-layers-split.sh when its deadline cut a sweep:
# the cut runs travel as target/carry/resume/<sweep>-<i>/ (with target/carry/resume/sweeps/) and
# GPU i resumes part i with `rocsweep run --resume` (the units already recorded are read, not
# run again), then the per-shape ratios over all parts (scripts/layer_ratio.py --each).
#   SWEEP=h200-conv bash scripts/device/h100-layers-resume.sh
set -u
SWEEP=${SWEEP:-h200-conv}
DEADLINE=${DEADLINE:-560}
R="$OUT/split"
mkdir -p "$R"
python3 -c "import lzma;open('/tmp/rs','wb').write(lzma.open('target/carry/split/rocsweep.xz').read())" && chmod +x /tmp/rs
nvidia-smi > "$R/nvidia-smi-resume.txt" 2>&1
export ROCSWEEP_PYTHON=$(command -v python3)
# The runs name their sweep files by the first command's path; put them back there.
mkdir -p /root/out/split && cp -r target/carry/resume/sweeps /root/out/split/ 2>/dev/null
for d in target/carry/resume/"$SWEEP"-[0-9]*; do cp -r "$d" "$R/"; done
for d in "$R/$SWEEP"-[0-9]*; do
  i=${d##*-}
  (
    CUDA_VISIBLE_DEVICES=$((i - 1)) timeout $((DEADLINE - SECONDS)) /tmp/rs run --resume "$d" --quiet \
      > "$R/$SWEEP-$i-resume.log" 2>&1
    echo "gpu $i: $SWEEP resume rc $? at ${SECONDS}s" >> "$R/stage-resume.log"
  ) &
done
wait
cat "$R/stage-resume.log"
rm -f "$R"/*/run.lock
runs=$(for d in "$R/$SWEEP"-[0-9]*; do [ -d "$d" ] && echo "$d"; done)
python3 scripts/layer_ratio.py --each $runs > "$R/$SWEEP-ratio.txt" 2>&1
tail -1 "$R/$SWEEP-ratio.txt"
rm -rf "$R"/*/workers
tar czf "$OUT/resume.tgz" -C "$OUT" split && rm -rf "$R"

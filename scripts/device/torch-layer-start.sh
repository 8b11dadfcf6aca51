# The start the torch-layer device scripts share (scripts/device/h200-torch-*.sh), sourced after
# they set R (their folder under $OUT) and SMI_MS (nvidia-smi's sampling period in ms; 0 for
# none): unpacks the release binary carried in as target/carry/after/rocsweep.xz to $f; defines
# log (a timestamped line on stdout and in $R/stage.log); writes $R/nvidia-smi.txt and
# $R/torch.txt; samples the SM clock, power, temperature and clock event reasons into $R/smi.csv
# in the background (its pid in $SMI); sets ROCSWEEP_PYTHON and WARM (the torch layer's `run`
# arguments: every torch solver, warm cache, one trial).
mkdir -p "$R"
f=target/carry/after/rocsweep
if [ ! -x "$f" ] && [ -f "$f.xz" ]; then
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$f.xz" "$f" &&
    chmod +x "$f" || exit 1
fi
log() { echo "[$(date -u +%H:%M:%S.%3N) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
SMI=
if [ "${SMI_MS:-0}" != 0 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv -lms "$SMI_MS" > "$R/smi.csv" 2>&1 &
  SMI=$!
fi
export ROCSWEEP_PYTHON=$(command -v python3)
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" > "$R/torch.txt" 2>&1
WARM=(run --quiet --no-report --backend torch --trials 1 --set 'timing.cache="warm"')

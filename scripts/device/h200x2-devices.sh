#!/usr/bin/env bash
# `run --devices` on a real two-GPU host (nvidia-h200-x2), run on the device machine from the
# repository root with a release binary carried in as target-devices/rocsweep:
# - `--devices all` finds both GPUs and runs one pool on each, concurrently; nvidia-smi, sampled
#   during the run, shows each worker process on the GPU its CUDA_VISIBLE_DEVICES names;
# - the same unit ids and statuses as a run without --devices;
# - shards 1/2 (on GPU 1) and 2/2 (on GPU 0), merged, give them too;
# - `--devices 2` is refused (exit 2): the host has two.
# Everything lands in $OUT: rc.txt, check.txt and runs.tgz (the run directories).
set -u
B=${ROCSWEEP:-target-devices/rocsweep}
R=/tmp/devruns
rm -rf "$R" && mkdir -p "$R"
cat > "$R/sweep.toml" <<'TOML'
name = "h200x2-devices"
op = "gemm"
backend = "cuda"
[axes]
m = [256, 512, 1024, 2048, 4096]
dtype = ["f32", "f16", "bf16"]
solver = "all"
[timing]
min_samples = 5
max_time = 0.05
TOML
S=$R/sweep.toml
nvidia-smi -L > "$R/nvidia-smi-L.txt" 2>&1
nvidia-smi --query-gpu=index,uuid --format=csv,noheader > "$R/gpus.csv" 2>&1
$B probe > "$R/probe.txt" 2>&1

( while :; do nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader; sleep 0.2; done ) > "$R/apps.csv" 2>/dev/null &
sampler=$!
$B run "$S" --devices all --out "$R/all" --quiet --no-report > "$R/all.log" 2>&1; echo "devices-all rc=$?" >> "$R/rc.txt"
kill "$sampler"; wait "$sampler" 2>/dev/null
$B run "$S" --out "$R/one" --quiet --no-report > "$R/one.log" 2>&1; echo "no-devices rc=$?" >> "$R/rc.txt"
$B run "$S" --shard 1/2 --devices 1 --out "$R/s1" --quiet --no-report > "$R/s1.log" 2>&1; echo "shard1-dev1 rc=$?" >> "$R/rc.txt"
$B run "$S" --shard 2/2 --devices 0 --out "$R/s2" --quiet --no-report > "$R/s2.log" 2>&1; echo "shard2-dev0 rc=$?" >> "$R/rc.txt"
$B merge "$R/s1" "$R/s2" --out "$R/merged" --no-report > "$R/merge.log" 2>&1; echo "merge rc=$?" >> "$R/rc.txt"
$B run "$S" --devices 2 --out "$R/bad" --quiet --no-report > "$R/bad.log" 2>&1; echo "devices-2 rc=$? (want 2)" >> "$R/rc.txt"

python3 - "$R" > "$R/check.txt" 2>&1 <<'PY'
import csv, glob, json, os, re, sys, collections
R = sys.argv[1]
def rows(d):
    return list(csv.DictReader(open(f"{R}/{d}/results.csv")))
def st(d):
    return {r["unit_id"]: r["status"] for r in rows(d)}
for d in ["all", "one", "s1", "s2", "merged"]:
    rs = rows(d)
    print(d, len(rs), dict(collections.Counter(r["status"] for r in rs)),
          "device_index", dict(collections.Counter(r["device_index"] for r in rs)))
print("all == one (ids, statuses):", st("all") == st("one"))
print("merged == one (ids, statuses):", st("merged") == st("one"))
diff = [k for k in st("one") if st("all").get(k) != st("one")[k]]
print("differing units all/one:", diff[:10])
m = json.load(open(f"{R}/all/manifest.json"))
print("manifest devices:", m.get("devices"), "backend devices:", m["backend"]["devices"])
uuid = dict(l.strip().split(", ") for l in open(f"{R}/gpus.csv") if ", " in l)
seen = collections.defaultdict(set)
for l in open(f"{R}/apps.csv"):
    p = [x.strip() for x in l.split(",")]
    if len(p) == 2 and p[0].isdigit():
        seen[p[0]].add(p[1])
ok = bad = 0
for log in glob.glob(f"{R}/all/workers/*.log"):
    head = open(log, errors="replace").read(4000)
    mm = re.search(r"worker pid (\d+) backend \S+(.*)", head)
    if not mm:
        continue
    pid, rest = mm.group(1), mm.group(2)
    vis = re.search(r"CUDA_VISIBLE_DEVICES=(\S+)", rest)
    want = uuid.get(vis.group(1)) if vis else None
    got = seen.get(pid, set())
    name = os.path.basename(log)
    if not vis:
        # The unrestricted worker that counted the devices for `all`.
        print(f"{name}: pid {pid} (no CUDA_VISIBLE_DEVICES: the counting worker) -> on GPU {sorted(got)}")
        continue
    if got:
        if want in got and len(got) == 1:
            ok += 1
        else:
            bad += 1
        print(f"{name}: pid {pid} CUDA_VISIBLE_DEVICES={vis.group(1) if vis else None} -> on GPU {sorted(got)} (want {want})")
    else:
        print(f"{name}: pid {pid} CUDA_VISIBLE_DEVICES={vis.group(1) if vis else None} -> not sampled")
print(f"workers seen on their own GPU: {ok}, elsewhere: {bad}; GPUs used: {len(set().union(*seen.values())) if seen else 0}")
PY
cp "$R/rc.txt" "$R/check.txt" "$OUT/"
cat "$R/rc.txt" "$R/check.txt"
tail -n 3 "$R/bad.log"
rm -f "$R"/*/run.lock
tar czf "$OUT/runs.tgz" -C /tmp devruns

#!/usr/bin/env bash
# Runs sweeps/slurm/array.sbatch on a real one-node Slurm cluster started here, merges the array
# tasks' run directories with `rocsweep merge`, and checks the merge against an unsharded run of
# the same sweep: the same unit ids with the same statuses.
#
# Usage: tests/slurm/run-slurm-test.sh ROCSWEEP_BINARY [WORK_DIR]
#
# Installs nothing: it needs Debian's slurm-wlm and munge (.ci/run installs them), python3, and
# root (slurmctld, slurmd and munged run as root with everything in WORK_DIR: a private munge
# key and socket, its own ports, state and spool directories, so a Slurm or munge already on
# the machine is left alone). Every daemon it starts is stopped on exit, by its pid, and waited for.
set -euo pipefail

bin=${1:?usage: $0 ROCSWEEP_BINARY [WORK_DIR]}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${2:-$(mktemp -d /tmp/rocsweep-slurm.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
tasks=4
sweep=sweeps/slurm/cpu-array.toml

for tool in munged slurmctld slurmd sbatch scontrol python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "missing: $tool (apt-get install slurm-wlm munge python3)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "needs root: slurmd starts the jobs" >&2; exit 2; }

mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/shards" "$work/out"
chmod 700 "$work/munge"

# The daemons run in the foreground as children of this script, so it can stop exactly them (by
# pid) and wait until they are gone.
pids=()
stop() {
    local rc=$?
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    if [ $rc != 0 ]; then
        echo "---- slurmctld.log" >&2; tail -n 30 "$work/slurmctld.log" >&2 2>/dev/null || true
        echo "---- slurmd.log" >&2; tail -n 30 "$work/slurmd.log" >&2 2>/dev/null || true
        echo "---- munged.log" >&2; tail -n 10 "$work/munge/munged.log" >&2 2>/dev/null || true
        for f in "$work"/out/*.out; do [ -e "$f" ] && { echo "---- $f" >&2; cat "$f" >&2; }; done
    fi
    exit $rc
}
trap stop EXIT

# munge: a fresh key and a private socket.
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$work/munge/munge.key"
munged --foreground --force --key-file="$work/munge/munge.key" --socket="$work/munge/munge.socket" \
    --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
    --seed-file="$work/munge/munged.seed" >"$work/munge/munged.out" 2>&1 &
pids+=($!)
for i in $(seq 100); do
    [ -S "$work/munge/munge.socket" ] && break
    [ "$i" = 100 ] && { echo "munged did not start" >&2; exit 1; }
    sleep 0.1
done

# Ports away from a real cluster's 6817/6818.
base=$((20000 + RANDOM % 20000))
cat > "$work/slurm.conf" <<EOF
ClusterName=rocsweeptest
SlurmctldHost=localhost
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm.conf

slurmctld -D -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N localhost >"$work/slurmd.out" 2>&1 &
pids+=($!)

echo "== waiting for the node"
for i in $(seq 120); do
    state=$(scontrol show node localhost 2>/dev/null | sed -n 's/.*State=\([A-Z+_]*\).*/\1/p' | head -n 1)
    case "$state" in
        IDLE*|MIXED*|ALLOCATED*) break ;;
    esac
    [ "$i" = 120 ] && { echo "the node did not come up (state: ${state:-none})" >&2; exit 1; }
    sleep 0.5
done
echo "node localhost: $state"

echo "== sbatch --array=0-$((tasks - 1)) --wait sweeps/slurm/array.sbatch"
cd "$repo"
sbatch --wait --array=0-$((tasks - 1)) --output="$work/out/%A_%a.out" \
    --export=ALL,ROCSWEEP="$bin",ROCSWEEP_SHARDS_DIR="$work/shards" \
    sweeps/slurm/array.sbatch
for f in "$work"/out/*.out; do echo "---- $f"; cat "$f"; done

echo "== rocsweep merge"
mapfile -t dirs < <(find "$work/shards" -mindepth 1 -maxdepth 1 -type d -name 'shard-*' | sort)
[ "${#dirs[@]}" = "$tasks" ] || { echo "expected $tasks shard directories, found ${#dirs[@]}: ${dirs[*]}" >&2; exit 1; }
"$bin" merge "${dirs[@]}" --out "$work/merged" --no-report

echo "== the unsharded run"
"$bin" run "$sweep" --backend cpu --quiet --no-report --out "$work/full"

echo "== merged == unsharded (unit ids and statuses)"
python3 - "$work" "$tasks" <<'PY'
import csv, json, sys
work, tasks = sys.argv[1], int(sys.argv[2])
def units(d):
    with open(f"{work}/{d}/results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    ids = [r["unit_id"] for r in rows]
    assert len(ids) == len(set(ids)), f"{d}: duplicated unit ids"
    return {r["unit_id"]: r["status"] for r in rows}
merged, full = units("merged"), units("full")
assert merged == full, f"merged != unsharded:\nonly merged: {merged.keys() - full.keys()}\nonly unsharded: {full.keys() - merged.keys()}\nstatus differs: {[k for k in merged.keys() & full.keys() if merged[k] != full[k]]}"
m = json.load(open(f"{work}/merged/manifest.json"))
shards = sorted(s["shard"] for s in m["merge"]["shards"])
assert shards == [f"{i}/{tasks}" for i in range(1, tasks + 1)], shards
for s in m["merge"]["shards"]:
    t = json.load(open(f"{s['dir']}/manifest.json"))
    assert t["shard"]["from"].startswith("SLURM_ARRAY_TASK_ID="), t["shard"]
statuses = sorted(set(full.values()))
print(f"ok: {len(full)} units, statuses {statuses}, merged from {len(shards)} Slurm array tasks")
PY

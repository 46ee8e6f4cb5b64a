#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): issue 7's isolation question turned around. Which
# activity of another process, one that does not take the device's turn, changes a probe's
# measured latency? For each neighbour of experiments/probe-isolation/disturb.cu ($MODES, default below;
# `alone` runs without one, first and last), the TMA GEMM's 8 probes (both TMA loads, iterations
# 0-3) are answered one process at a time in a fresh workspace whose reference run was made
# without the neighbour; the neighbour runs from 1 s before the probe query to its end. A mode
# MODExN starts N such neighbours, and MODE@inject runs them under libargus_inject.so (CUPTI
# callbacks and kernel activity on, as in a probe process; no turn); MODE:N pauses N ms between
# the neighbour's rounds; MODE/N answers the query with N probe processes at once
# (--concurrent-probes N, default 1): `alone/8` against `kernel/8` (1-block kernels back to back
# keep the GPU busy) tests whether the first kernels of a concurrent batch, the ones that came out
# high in experiments/HISTORY.md, are so because the GPU was idle before them. Knobs for the queries
# (reference and probes) follow the neighbour, before any /N: MODE+lazy sets
# CUDA_MODULE_LOADING=LAZY (each process uploads its kernel's code at the first launch, inside its
# turn, instead of at set-up beside the other processes' set-ups), MODE+settleN
# ARGUS_GPU_TURN_SETTLE_MS=N (every process waits N ms after taking the turn), MODE+quietN
# ARGUS_GPU_TURN_QUIET_MS=N (a process waits after taking the turn until N ms have passed since
# another ended its set-up or gave the turn up; +quietsetupN and +quietexitN set the two kinds'
# quiet times apart), MODE+idleN ARGUS_GPU_TURN_IDLE_MS=N (the turn given up while the program
# is idle after its traced launch), MODE+l2MODE ARGUS_GPU_TURN_L2=MODE (what a new holder does to
# the L2 before the program's first GPU work: empty, the default, read, write or none),
# e.g. alone+settle150/8, alone+quiet100/8,
# alone+quietsetup150+quietexit30/8, alone+idle2+quiet100/8.
# Prints,
# per mode, each probe's latency median against the first `alone` run and how many are more
# than 15 % off. About 6 s per mode after the build.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source scripts/gpu/lib.sh
gpu_setup
gpu_build disturb-build.log argus argus_inject
w=/tmp/probe-disturb
rm -rf "$w"; mkdir -p "$w"
# The neighbour is built here, not by the project's CMake (experiments are not part of the build).
disturb="$w/argus_bench_disturb"
nvcc -std=c++17 -O2 -arch=sm_90a -Xcompiler -pthread -o "$disturb" \
  experiments/probe-isolation/disturb.cu >>"$out/disturb-build.log" 2>&1 ||
  { echo "disturb.cu did not build (see $out/disturb-build.log)"; exit 1; }
common=(--program examples/tma_gemm/argus.yaml --kernel tma_gemm --region mainloop/tma_load
  --scope iter=0..3)
modes="${MODES:-alone cpu idle malloc copy pageable hostmem context process kernel alone}"
n=0
for mode in $modes; do
  n=$((n + 1))
  at_once=1 query_env=()
  if [ "${mode%/*}" != "$mode" ]; then at_once="${mode##*/}" mode="${mode%/*}"; fi
  tag="$mode" mode="${mode%%+*}"
  for knob in $(tr + ' ' <<<"${tag#"$mode"}"); do
    case "$knob" in
      lazy) query_env+=(CUDA_MODULE_LOADING=LAZY) ;;
      settle[0-9]*) query_env+=(ARGUS_GPU_TURN_SETTLE_MS="${knob#settle}") ;;
      quiet[0-9]*) query_env+=(ARGUS_GPU_TURN_QUIET_MS="${knob#quiet}") ;;
      quietsetup[0-9]*) query_env+=(ARGUS_GPU_TURN_QUIET_SETUP_MS="${knob#quietsetup}") ;;
      quietexit[0-9]*) query_env+=(ARGUS_GPU_TURN_QUIET_EXIT_MS="${knob#quietexit}") ;;
      idle[0-9]*) query_env+=(ARGUS_GPU_TURN_IDLE_MS="${knob#idle}") ;;
      l2write|l2read|l2empty|l2none) query_env+=(ARGUS_GPU_TURN_L2="${knob#l2}") ;;
      *) echo "unknown knob +$knob (lazy, settleN, quietN, quietsetupN, quietexitN, idleN, l2write, l2read, l2empty, l2none)"; exit 2 ;;
    esac
  done
  ws="$w/ws-$n-$mode"
  env "${query_env[@]}" "$B/argus" query "${common[@]}" --workspace "$ws" --signals duration --json >"$w/warm-$n.json" ||
    { echo "$mode: reference query failed"; continue; }
  pids=()
  if [ "$mode" != alone ]; then
    kind="${mode%x[0-9]*}" count=1 pause=0
    [ "$kind" != "$mode" ] && count="${mode##*x}"
    env=()
    if [ "${kind%@inject}" != "$kind" ]; then
      kind="${kind%@inject}"
      env=(CUDA_INJECTION64_PATH="$B/src/backends/region_trace/libargus_inject.so")
    fi
    if [ "${kind%:*}" != "$kind" ]; then pause="${kind#*:}" kind="${kind%:*}"; fi
    for i in $(seq "$count"); do
      env "${env[@]}" ARGUS_TRACE_DIR="$w/disturb-trace-$n-$i" "$disturb" "$kind" "$pause" >>"$w/disturb-$n.log" 2>&1 &
      pids+=($!)
    done
    sleep 1
  fi
  t0=$(date +%s.%N)
  env "${query_env[@]}" "$B/argus" query "${common[@]}" --workspace "$ws" --concurrent-probes "$at_once" \
    --signals op_latency --json >"$w/probe-$n-$tag@$at_once.json" 2>"$w/probe-$n.err"
  rc=$? t1=$(date +%s.%N)
  for pid in "${pids[@]}"; do kill -TERM "$pid"; wait "$pid"; done
  echo "$tag ($at_once at once): probe query exit $rc, $(python3 -c "print(f'{$t1 - $t0:.1f}')") s; neighbour: $(cat "$w/disturb-$n.log" 2>/dev/null | tail -1)"
done
python3 - "$w" <<'PY' | tee "$out/disturb.md"
import glob, json, os, re, sys
runs = sorted(glob.glob(os.path.join(sys.argv[1], "probe-*.json")),
              key=lambda p: int(re.search(r"probe-(\d+)-", p).group(1)))
def latencies(path):
    """{(op, iteration): latency median} and the probes whose kernels ran before any other
    probe process of the query had ended (the join's isolation.neighbours, last_exit null)."""
    try:
        value = json.load(open(path))["signals"]["op_latency"]["value"]
    except Exception:
        return None, set()
    key = lambda o: (o["op"].split(":", 1)[1], o["iteration"])
    around = {n["collect"]: n for n in value.get("isolation", {}).get("neighbours", [])}
    first = {key(o) for o in value["ops"]
             if o.get("provenance", {}).get("collect_task") in around and
             around[o["provenance"]["collect_task"]].get("last_exit") is None}
    return {key(o): o["latency"]["median"] for o in value["ops"]}, first
tables = [(re.search(r"probe-\d+-(.*)\.json", p).group(1), *latencies(p)) for p in runs]
base = next((t for m, t, _ in tables if m == "alone@1" and t), None)
if base is None:
    sys.exit("no `alone` run (one probe at a time) joined: nothing to compare")
keys = sorted(base)
print("Latency medians (ns); * marks a probe whose kernels ran before any other probe process had "
      "ended (one at a time: the first probe).\n")
print("| neighbour@at once | " + " | ".join(f"{op} it {it}" for op, it in keys) +
      " | > 15 % off | largest | off among the * |")
print("| --- " * (len(keys) + 4) + "|")
for mode, t, first in tables:
    if not t:
        print(f"| {mode} | " + " | ".join("-" for _ in keys) + " | no report | | |")
        continue
    diffs = {k: (t[k] - base[k]) / base[k] for k in keys if k in t}
    off = sum(abs(d) > 0.15 for d in diffs.values())
    cells = " | ".join((f"{t[k]:.0f}" + ("*" if k in first else "")) if k in t else "-" for k in keys)
    off_first = sum(abs(diffs[k]) > 0.15 for k in first if k in diffs)
    print(f"| {mode} | {cells} | {off} of {len(diffs)} | "
          f"{100 * max(diffs.values(), key=abs):+.1f} % | {off_first} of {len(first)} |")
PY
# Every probe of every run, in the order its kernels ran: its latency over the CTAs, when its
# process set up and took the turn, and which other processes were in which phase beside its
# kernels; the probes more than 15 % off the first `alone` run are marked. Kept with the reports.
python3 - "$w" >"$out/detail.md" <<'PY'
import glob, json, os, re, sys
runs = sorted(glob.glob(os.path.join(sys.argv[1], "probe-*.json")),
              key=lambda p: int(re.search(r"probe-(\d+)-", p).group(1)))
def ops(path):
    try:
        value = json.load(open(path))["signals"]["op_latency"]["value"]
    except Exception:
        return None, {}
    around = {n["collect"]: n for n in value.get("isolation", {}).get("neighbours", [])}
    return value["ops"], around
key = lambda o: (o["op"].split(":", 1)[1], o["iteration"])
base = None
for path in runs:
    found, _ = ops(path)
    if found and path.endswith("alone@1.json"):
        base = {key(o): o["latency"]["median"] for o in found}
        break
for path in runs:
    found, around = ops(path)
    print(f"\n## {os.path.basename(path)}\n")
    if not found:
        print("no report")
        continue
    rows = []
    for o in found:
        n = around.get(o.get("provenance", {}).get("collect_task"), {})
        t = {}
        for event, ns in n.get("timeline", []):
            t.setdefault(event, ns)  # the first turn, not a re-take after an idle release
        lat = o["latency"]
        off = base and key(o) in base and abs(lat["median"] - base[key(o)]) / base[key(o)] > 0.15
        ms = lambda e: f"{t[e] / 1e6:.0f}" if e in t else "-"
        rows.append((n.get("kernels", [0])[0], f"| {'**off**' if off else ''} | {key(o)[0]} it {key(o)[1]} | "
                     f"{lat['min']}/{lat['median']:.0f}/{lat['max']} ({lat['count']}) | "
                     f"{ms('turn_asked')} | {ms('turn_taken')} | {ms('turn_quiet')} | "
                     + (f"{n['last_exit']['before_ns'] / 1e6:.1f}" if n.get("last_exit") else "-")
                     + " | "
                     + ", ".join(f"{b['phase']} {b['overlap_ns'] / 1e3:.1f} us" for b in n.get("beside", []))
                     + " |"))
    print("| | probe | latency ns min/median/max (CTAs) | turn asked (ms after set-up asked) | turn taken | quiet time over | last other exit before (ms) | others beside its kernels |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for _, row in sorted(rows):
        print(row)
PY
cp "$w"/probe-*.json "$out/" 2>/dev/null
(cd "$out" && tar czf /tmp/disturb-results.tgz probe-*.json detail.md && rm -f probe-*.json &&
  mv /tmp/disturb-results.tgz "$out/disturb-results.tgz")

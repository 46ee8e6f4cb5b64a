#!/usr/bin/env bash
# The seed's multi-run query experiment for forced-completion probes (issue 7), on the TMA GEMM.
# For each N, a fresh workspace first gets the base PTX and the reference run (a `duration`
# query with the same region and scope), then ONE `argus query --signals op_latency` submits the
# N probe branches (2 TMA loads x N/2 iterations) in one runtime. Measured from the workspace's
# task records: from the start of the discovery Control task (which submits the branches) to
# the end of the probe join, split into compile/link (probe PTX passes + builds), run (probe
# collections, each its own process and launch), and synthesis (discovery + join); workspace
# bytes added per probe. Probes run as concurrent processes that take the GPU's turn (--concurrent-probes,
# default 8); the 8-probe query is then repeated one probe at a time in a fresh workspace and the
# two latency tables are compared probe by probe. Usage: run.sh ARGUS OUTDIR
set -euo pipefail
argus="$1"
out="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mkdir -p "$out"
summary="$out/summary.md"
rm -f "$out/critical_path.txt"
echo "| probes | at once | submit->synthesized (s) | s/probe | compile+link (s, summed) | run (s, summed) | run span (s) | synthesis (s) | workspace MiB/probe | query wall (s) | kernels overlapping |" >"$summary"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |" >>"$summary"
# One probe: the second TMA load (whose phase no later load shares) in iteration 0, selected with
# --ops; then both loads of 1, 2, 4 and 8 iterations (2..16 probes).
second_load=$("$argus" ptx discover "$root/tests/data/ptx/examples_tma_gemm.ptx" \
  --region mainloop/tma_load --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[1]["op_id"])')
measure() {  # measure ITERS AT_ONCE [TAG]: one row of the table
  local iters="$1" at_once="$2" tag="${3:-}"
  local n=$((2 * iters))
  local ops=()
  local scope="iter=0..$((iters - 1))"
  if [ "$iters" = 0 ]; then n=1; scope="iter=0"; ops=(--ops "$second_load"); fi
  local ws="$out/ws_${n}_x${at_once}${tag}"
  rm -rf "$ws"
  local common=(--program "$root/examples/tma_gemm/argus.yaml" --kernel tma_gemm --region mainloop/tma_load --scope "$scope" --workspace "$ws")
  "$argus" query "${common[@]}" --signals duration --json >"$out/warm_$n.json"
  local before after t0 t1
  before=$(du -sb "$ws" | cut -f1)
  t0=$(date +%s.%N)
  "$argus" query "${common[@]}" "${ops[@]}" --concurrent-probes "$at_once" --signals op_latency \
    --json >"$out/probe_${n}_x${at_once}${tag}.json"
  t1=$(date +%s.%N)
  after=$(du -sb "$ws" | cut -f1)
  python3 - "$ws/argus.db" "$n" "$before" "$after" "$t0" "$t1" "$out/probe_${n}_x${at_once}${tag}.json" "$at_once${tag}" >>"$summary" <<'PY'
import json, sqlite3, sys
db, n, before, after, t0, t1, report, at_once = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), sys.argv[7], sys.argv[8]
rows = sqlite3.connect(db).execute(
    "select descriptor_json, started_at, ended_at from tasks where status='succeeded'").fetchall()
tasks = [(json.loads(d)["id"], s, e) for d, s, e in rows if s is not None and e is not None]
def span(prefix):
    return [(s, e) for i, s, e in tasks if i.startswith(prefix)]
disc = span("discover/")
join = span("synth/forced_completion_probe")
assert disc and join, "discovery or join did not run"
start, end = min(s for s, _ in disc), max(e for _, e in join)
# started_at/ended_at are milliseconds since the epoch.
probe = lambda p: sum(e - s for s, e in span(p)) / 1000
compile_s = (probe("variant/probe[") + probe("build/probe["))
run_s = probe("collect/probe[")
collects = span("collect/probe[")
run_span = (max(e for _, e in collects) - min(s for s, _ in collects)) / 1000
synth_s = probe("discover/") + probe("synth/forced_completion_probe")
value = json.load(open(report))["signals"]["op_latency"].get("value", {})
ops = value.get("ops", [])
assert len(ops) == n, f"{len(ops)} of {n} probes joined: {value.get('failed')}"
iso = value.get("isolation", {})
total = (end - start) / 1000
# The query's critical path, ms after discovery starts, one line per measured query appended to
# critical_path.txt in the order they ran: when the first and last task of each kind started and
# ended, and each kind's median duration.
import os, statistics
kinds = {"variant": "variant/probe[", "build": "build/probe[", "collect": "collect/probe[",
         "join": "synth/forced_completion_probe"}
steps = []
for kind, prefix in kinds.items():
    s = span(prefix)
    if s:
        steps.append(f"{kind} {min(a for a, _ in s) - start:.0f}-{max(b for _, b in s) - start:.0f} ms"
                     f" (first ends {min(b for _, b in s) - start:.0f}, median "
                     f"{statistics.median(b - a for a, b in s):.0f} ms)")
with open(os.path.join(os.path.dirname(report), "critical_path.txt"), "a") as f:
    f.write(f"{n} probes, {at_once} at once: " + "; ".join(steps) + "\n")
print(f"| {n} | {at_once} | {total:.2f} | {total / n:.3f} | {compile_s:.2f} | {run_s:.2f} | {run_span:.2f} | {synth_s:.3f} | {(after - before) / n / 2**20:.2f} | {float(t1) - float(t0):.2f} | {len(iso.get('overlaps', []))} of {iso.get('kernels_checked', 0)} kernels |")
PY
}
for iters in 0 1 2 4 8; do measure "$iters" 8; done
measure 4 1  # the 8 probes again, one process at a time, twice (the run-to-run spread)
measure 4 1 b
cat "$summary"
echo; cat "$out/critical_path.txt"
# Probe by probe: concurrent processes taking turns against one process at a time, and one process
# at a time against itself (a second run: how much the latencies move between runs anyway).
python3 - "$out/probe_8_x8.json" "$out/probe_8_x1.json" "$out/probe_8_x1b.json" <<'PY' | tee "$out/equivalence.md"
import json, sys
def table(path):
    ops = json.load(open(path))["signals"]["op_latency"]["value"]["ops"]
    return {(o["op"], o["iteration"]): o for o in ops}
shared, alone, again = (table(p) for p in sys.argv[1:4])
# Which other probe processes were starting (before any hold) or ending (after their turn) while
# each probe's kernels ran, and how long before them the last other process ended (the join's
# isolation.neighbours).
value = json.load(open(sys.argv[1]))["signals"]["op_latency"]["value"]
around = {n["collect"]: n for n in value.get("isolation", {}).get("neighbours", [])}
def neighbourhood(op):
    n = around.get(op.get("provenance", {}).get("collect_task"))
    if n is None:
        return "?", "?"
    beside = ", ".join(f"{b['collect'].split('/')[-1]} {b['phase']} {b['overlap_ns'] / 1e3:.0f} us"
                       for b in n["beside"]) or "none"
    last = n["last_exit"]
    return beside, "none" if last is None else f"{last['before_ns'] / 1e6:.1f}"
print("| op | iter | latency median, 8 at once (ns) | one at a time (ns) | again, one at a time (ns) | 8 at once vs one at a time | again vs one at a time | others starting or ending during its kernels (8 at once) | last other exit before its kernels (ms) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
worst = {"shared": 0.0, "again": 0.0}
for key in sorted(shared):
    la, lb, lc = (t[key]["latency"]["median"] for t in (shared, alone, again))
    worst["shared"] = max(worst["shared"], abs(la - lb) / lb)
    worst["again"] = max(worst["again"], abs(lc - lb) / lb)
    beside, last = neighbourhood(shared[key])
    print(f"| {key[0]} | {key[1]} | {la:.0f} | {lb:.0f} | {lc:.0f} | {100 * (la - lb) / lb:+.1f} % | {100 * (lc - lb) / lb:+.1f} % | {beside} | {last} |")
print(f"\nlargest latency difference: 8 at once vs one at a time {100 * worst['shared']:.1f} %, "
      f"one at a time run again {100 * worst['again']:.1f} %")
# Where each probe process's time went between its hold events (turn_timeline.jsonl), medians
# over the 8 processes run at once.
import collections, statistics
phases = collections.defaultdict(list)
for n in around.values():
    t = n.get("timeline", [])
    for (a, ta), (b, tb) in zip(t, t[1:]):
        phases[f"{a} -> {b}"].append(tb - ta)
if phases:
    print("\nper probe process, 8 at once (medians over the processes, ms):")
    for k, v in phases.items():
        print(f"  {k}: {statistics.median(v) / 1e6:.2f} (n={len(v)})")
PY
# What the probe processes ran with (libargus_inject.so's turn settings; unset: its defaults).
{
  echo
  echo "turn settings: ARGUS_GPU_TURN_L2=${ARGUS_GPU_TURN_L2:-empty (default)}," \
    "ARGUS_GPU_TURN_QUIET_MS=${ARGUS_GPU_TURN_QUIET_MS:-0 (default)}" \
    "${ARGUS_GPU_TURN_QUIET_SETUP_MS:+ARGUS_GPU_TURN_QUIET_SETUP_MS=$ARGUS_GPU_TURN_QUIET_SETUP_MS}" \
    "${ARGUS_GPU_TURN_QUIET_EXIT_MS:+ARGUS_GPU_TURN_QUIET_EXIT_MS=$ARGUS_GPU_TURN_QUIET_EXIT_MS}" \
    "${ARGUS_GPU_TURN_IDLE_MS:+ARGUS_GPU_TURN_IDLE_MS=$ARGUS_GPU_TURN_IDLE_MS}"
} | tee -a "$summary"

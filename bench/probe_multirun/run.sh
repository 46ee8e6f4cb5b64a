#!/usr/bin/env bash
# The seed's multi-run query experiment for forced-completion probes (issue 7), on the TMA GEMM.
# For each N, a fresh workspace first gets the base PTX and the reference run (a `duration`
# query with the same region and scope), then ONE `argus query --signals op_latency` submits the
# N probe branches (2 TMA loads x N/2 iterations) in one runtime. Measured from the workspace's
# task records: from the start of the discovery Control task (which submits the branches) to
# the end of the probe join, split into compile/link (probe PTX passes + builds), run (probe
# collections, each its own process and launch), and synthesis (discovery + join); workspace
# bytes added per probe. Usage: run.sh ARGUS OUTDIR
set -euo pipefail
argus="$1"
out="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mkdir -p "$out"
summary="$out/summary.md"
echo "| probes | submit->synthesized (s) | s/probe | compile+link (s, summed) | run (s, summed) | synthesis (s) | workspace MiB/probe | query wall (s) |" >"$summary"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |" >>"$summary"
# One probe: the second TMA load (whose phase no later load shares) in iteration 0, selected with
# --ops; then both loads of 1, 2, 4 and 8 iterations (2..16 probes).
second_load=$("$argus" ptx discover "$root/tests/data/ptx/examples_tma_gemm.ptx" \
  --region mainloop/tma_load --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[1]["op_id"])')
for iters in 0 1 2 4 8; do
  n=$((2 * iters))
  ops=()
  scope="iter=0..$((iters - 1))"
  if [ "$iters" = 0 ]; then n=1; scope="iter=0"; ops=(--ops "$second_load"); fi
  ws="$out/ws_$n"
  rm -rf "$ws"
  common=(--program "$root/examples/tma_gemm/argus.yaml" --kernel tma_gemm --region mainloop/tma_load --scope "$scope" --workspace "$ws")
  "$argus" query "${common[@]}" --signals duration --json >"$out/warm_$n.json"
  before=$(du -sb "$ws" | cut -f1)
  t0=$(date +%s.%N)
  "$argus" query "${common[@]}" "${ops[@]}" --signals op_latency --json >"$out/probe_$n.json"
  t1=$(date +%s.%N)
  after=$(du -sb "$ws" | cut -f1)
  python3 - "$ws/argus.db" "$n" "$before" "$after" "$t0" "$t1" "$out/probe_$n.json" >>"$summary" <<'PY'
import json, sqlite3, sys
db, n, before, after, t0, t1, report = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
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
synth_s = probe("discover/") + probe("synth/forced_completion_probe")
ops = json.load(open(report))["signals"]["op_latency"].get("value", {}).get("ops", [])
assert len(ops) == n, f"{len(ops)} of {n} probes joined"
total = (end - start) / 1000
print(f"| {n} | {total:.2f} | {total / n:.3f} | {compile_s:.2f} | {run_s:.2f} | {synth_s:.3f} | {(after - before) / n / 2**20:.2f} | {float(t1) - float(t0):.2f} |")
PY
done
cat "$summary"

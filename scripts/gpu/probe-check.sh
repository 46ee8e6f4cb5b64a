#!/usr/bin/env bash
# Runs ON the GPU machine: builds argus and the injection library, answers op_latency queries on
# the three async examples (checking every probe's program passed its check with output equal to
# the reference run's), runs the gpu-labelled probe test and the multi-run probe benchmark.
# Usage: OUT=dir probe-check.sh [queries|bench|all]  (default all)
set -uo pipefail
what="${1:-all}"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
root="$gpu_root"
cd "$root"
gpu_build build.log argus argus_inject
argus="$B/argus"
status=0
if [ "$what" = all ] || [ "$what" = queries ]; then
  q() {  # name region scope
    local name="$1"; shift
    local t0=$(date +%s.%N)
    "$argus" query --json --workspace "/tmp/ws-$name" "$@" --signals op_latency >"$out/$name.json" 2>"$out/$name.err"
    local rc=$? t1=$(date +%s.%N)
    python3 - "$out/$name.json" "$name" "$rc" "$t0" "$t1" <<'PY' || status=1
import json, sys
path, name, rc, t0, t1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{name}: no JSON report (exit {rc}): {e}"); sys.exit(1)
e = r["signals"]["op_latency"]; v = e.get("value", {})
ops = v.get("ops", [])
bad = [o for o in ops if not o["correctness"]["output_equal_to_reference"] or o["latency"]["median"] <= 0]
print(f"{name}: exit {rc}, status {e.get('status')}, {len(ops)} probes joined, {len(v.get('failed', []))} failed, "
      f"{len(v.get('not_probed', []))} not probed, {len(bad)} with output != reference or latency <= 0, {t1 - t0:.1f} s")
for o in ops:
    print(f"  {o['op']:<30} it {o['iteration']:>2} lat med {o['latency']['median']:>8.0f} {o['unit']} exposed {o['exposed']['median']:>8.0f} "
          f"slack {o['slack']:>8.0f} joined {o['joined']} check {'PASS' if o['correctness']['check_passed'] else 'FAIL'} "
          f"out==ref {o['correctness']['output_equal_to_reference']}{' [phase]' if 'shared_phase' in o else ''}")
for f in v.get("failed", []) + r.get("failures", [])[:3]:
    print("  failed:", json.dumps(f)[:400])
for n in v.get("not_probed", [])[:4]:
    print("  not probed:", n.get("op"), n.get("reason", "")[:200])
sys.exit(0 if rc == 0 and ops and not bad and not v.get("failed") else 1)
PY
  }
  q tma_gemm --program examples/tma_gemm/argus.yaml --kernel tma_gemm --region mainloop/tma_load
  q cp_async --program examples/cp_async_pipeline/argus.yaml --kernel cp_async_gemv --region mainloop/load --scope iter=0..1
  q warp_specialized --program examples/warp_specialized/argus.yaml --kernel warp_specialized_gemm --region producer/mainloop/tma_load --scope iter=0..3
  python3 tests/gpu_probe/probe_test.py "$argus" "$root" >"$out/probe_test.log" 2>&1
  echo "gpu probe test: exit $? ($(tail -1 "$out/probe_test.log"))"
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  bash bench/probe_multirun/run.sh "$argus" /tmp/argus-probe-bench >"$out/bench.log" 2>&1 || status=1
  cp /tmp/argus-probe-bench/summary.md "$out/bench_summary.md" 2>/dev/null
  cp /tmp/argus-probe-bench/equivalence.md /tmp/argus-probe-bench/probe_8_x*.json "$out/" 2>/dev/null
  tail -40 "$out/bench.log"
fi
exit $status

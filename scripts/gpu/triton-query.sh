#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): `argus query` on the Triton TMA matmul end to end, twice,
# then the optimization example.
#  1. argus query --signals duration on examples/triton_matmul: the plan's triton_dump task runs
#     run.py once with Triton's dump knobs, ptx_pass lowers the markers to trace records,
#     build_variant writes the override wrapper, region_trace runs it under libargus_inject.so;
#     checks the occurrence counts the launch implies (64 CTAs x 4 warps: mainloop 256,
#     mainloop/iteration 256 x 8 K steps = 2048);
#  2. the same query again: every task must be reused from the workspace (0 executed), with the
#     same numbers;
#  3. examples/triton_matmul/optimize.py on the same workspace (the baseline's dump is reused),
#     measuring $OPT_BUDGET candidates beyond the baseline.
# Builds only the argus binary and the injection library (device-build.sh builds everything).
# Writes under $OUT: triton-query-summary.txt, query1.txt, query2.json, optimize.txt.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
cd "$gpu_root"
summary="$out/triton-query-summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
start=$(date +%s)
gpu_build triton-query-build.log argus argus_inject
say "built argus in $(($(date +%s) - start)) s"
spec=examples/triton_matmul/argus.yaml
ws=/tmp/argus-ws-triton
rm -rf "$ws"
query=("$B/argus" query --program "$spec" --kernel matmul_tma_argus --region mainloop
       --signals duration --workspace "$ws" --require-gpu)
fail=0

start=$(date +%s%N)
"${query[@]}" >"$out/query1.txt" 2>&1
rc=$?
say "query 1: exit $rc in $((($(date +%s%N) - start) / 1000000)) ms"
grep -vE '^\[' "$out/query1.txt" | tee -a "$summary"
[ $rc -eq 0 ] || fail=1

start=$(date +%s%N)
"${query[@]}" --json >"$out/query2.json" 2>"$out/query2.err"
rc=$?
say "query 2: exit $rc in $((($(date +%s%N) - start) / 1000000)) ms"
python3 - "$out/query2.json" <<'PY' | tee -a "$summary"
import json, sys
d = json.load(open(sys.argv[1]))
run = d["run"]
dur = d["signals"]["duration"]
got = {r["path"]: r["duration"]["count"] for r in (dur.get("value") or {}).get("regions", [])}
want = {"mainloop": 256, "mainloop/iteration": 2048}
print(f"second query: {run['executed']} of {run['tasks']} tasks executed; duration {dur['status']} "
      f"({dur.get('qualification')}); counts {got} expected {want}")
for r in (dur.get("value") or {}).get("regions", []):
    s = r["duration"]
    print(f"  {r['path']:<20} median {s['median']:.0f} ns  p95 {s['p95']:.0f} ns  count {s['count']}")
ok = run["executed"] == 0 and got == want and not d["failures"]
print("reuse and counts:", "OK" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
PY
[ $? -eq 0 ] || fail=1

start=$(date +%s)
PYTHONUNBUFFERED=1 ARGUS_BIN="$B/argus" timeout "${OPT_TIMEOUT:-90}" \
  python3 examples/triton_matmul/optimize.py --workspace "$ws" --out /tmp/argus-opt \
  --budget "${OPT_BUDGET:-2}" >"$out/optimize.txt" 2>&1
rc=$?
say "optimize.py: exit $rc in $(($(date +%s) - start)) s"
tee -a "$summary" <"$out/optimize.txt"
[ $rc -eq 0 ] || fail=1
say "triton query check: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail

#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): the Triton path end to end on examples/triton_matmul.
#  1. argus build --variant full_trace / trace_free: runs run.py once with Triton's dump knobs,
#     transforms the kernel's PTX, writes a wrapper that substitutes it (TRITON_KERNEL_OVERRIDE);
#  2. runs both wrappers (the full trace under libargus_inject.so) and checks PASS;
#  3. argus trace: decoded region timings; checks the occurrence counts the launch implies
#     (64 CTAs x 4 warps: mainloop and epilogue 256 each, iteration 256 x 8 K steps = 2048);
#  4. the TTGIR Argus read from the dump has the same region IDs as the PTX.
# Writes under $OUT: triton-summary.txt, trace.json, timeline.json.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
summary="$out/triton-summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
gpu_build triton-build.log
inject="$B/src/backends/region_trace/libargus_inject.so"
spec=examples/triton_matmul/argus.yaml
python3 -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)" | tee -a "$summary"
fail=0
for v in full_trace trace_free; do
  start=$(date +%s%N)
  if ! "$B/argus" build --program "$spec" --variant $v -o /tmp/tr-$v >"$out/build-$v.log" 2>&1; then
    say "build $v: FAILED"; tail -20 "$out/build-$v.log" | tee -a "$summary"; fail=1; continue
  fi
  say "build $v: ok in $((($(date +%s%N) - start) / 1000000)) ms: $(grep -E 'statistics' "$out/build-$v.log")"
done
rm -rf /tmp/tr-trace
CUDA_INJECTION64_PATH="$inject" ARGUS_TRACE_DIR=/tmp/tr-trace /tmp/tr-full_trace/triton_matmul \
  >"$out/run-full.log" 2>&1
say "full_trace run: exit $? $(grep -E 'PASS|FAIL|Overriding' "$out/run-full.log" | tr '\n' ' ')"
/tmp/tr-trace_free/triton_matmul >"$out/run-free.log" 2>&1
say "trace_free run: exit $? $(grep -E 'PASS|FAIL|Overriding' "$out/run-free.log" | tr '\n' ' ')"
"$B/argus" trace /tmp/tr-trace --trace-map /tmp/tr-full_trace/trace_map.json \
  --chrome-trace "$out/timeline.json" 2>&1 | tee -a "$summary"
"$B/argus" trace /tmp/tr-trace --trace-map /tmp/tr-full_trace/trace_map.json --json >"$out/trace.json" 2>&1
python3 - "$out/trace.json" <<'PY' | tee -a "$summary"
import json, sys
d = json.load(open(sys.argv[1]))["duration"]
want = {"mainloop": 256, "mainloop/iteration": 2048, "epilogue": 256}
got = {r["path"]: r["duration"]["count"] for r in d["regions"]}
ok = all(got.get(p) == n for p, n in want.items())
print("occurrence counts", got, "expected", want, "->", "OK" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
PY
[ $? -eq 0 ] || fail=1
"$B/argus" regions /tmp/tr-full_trace/matmul_tma_argus.ttgir 2>&1 | tee -a "$summary"
"$B/argus" regions /tmp/tr-full_trace/triton/dump/*/matmul_tma_argus.ptx 2>&1 | tee -a "$summary"
say "triton check: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail

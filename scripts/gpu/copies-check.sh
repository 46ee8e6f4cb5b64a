#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): issue 31's callee copies on the H200.
#   run      examples/specialized_callee built as `original` and with --copy-callees: both run
#            and print PASS (the driver loads the patched cubin, the copies compute the same);
#   truth    ctest's attribution_specialized_callee_gpu (exact per-region counts from the copies
#            equal the masked reference runs, totals equal CUPTI's) and attribution_shared_callee_gpu
#            (the older example, now through copies too), their JSON kept in $OUT/pc.
# Usage: copies-check.sh. The summary goes to $OUT/copies-summary.txt.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
cd "$gpu_root"
summary="$out/copies-summary.txt"
say() { echo "$*" | tee -a "$summary"; }
start=$(date +%s)
gpu_build copies-build.log argus argus_inject argus_cupti_sass argus_callee_copies_gpu_test \
  argus_attribution_gpu_test argus_example_specialized_callee
say "built in $(($(date +%s) - start)) s"
fail=0
spec=examples/specialized_callee/argus.yaml
for v in plain copies; do
  flag=()
  [ "$v" = copies ] && flag=(--copy-callees)
  "$B/argus" build --program "$spec" --variant original "${flag[@]}" -o "/tmp/sc-$v" \
    >"$out/build-$v.txt" 2>&1 || { say "build $v failed"; fail=1; continue; }
  exe=$(find "/tmp/sc-$v" -maxdepth 1 -type f -perm -u+x | head -1)
  "$exe" >"$out/run-$v.txt" 2>&1
  say "run $v: exit $? $(tail -1 "$out/run-$v.txt")"
done
cp /tmp/sc-copies/callee_copies.json "$out/" 2>/dev/null || true
# The patched executable's raw per-PC counts, as CUPTI reports them (functions and offsets).
exe=$(find /tmp/sc-copies -maxdepth 1 -type f -perm -u+x | head -1)
CUDA_INJECTION64_PATH="$B/src/backends/cupti_sass/libargus_cupti_sass.so" ARGUS_OUT_DIR=/tmp/sc-pc \
  ARGUS_PC_KERNELS=specialized_callee ARGUS_PC_MAX_LAUNCHES=1 CUDA_MODULE_LOADING=EAGER \
  ARGUS_SASS_METRICS=smsp__sass_inst_executed ARGUS_SASS_GRANULARITY=gpu "$exe" \
  >"$out/run-copies-cupti.txt" 2>&1
say "run copies under CUPTI: exit $? $(tail -1 "$out/run-copies-cupti.txt")"
(cd /tmp && tar czf "$out/copies-pc.tgz" sc-pc sc-copies/callee_copies.json 2>/dev/null)
mkdir -p "$out/pc"
ARGUS_PC_FIXTURE_OUT="$out/pc" ctest --test-dir "$B" --output-on-failure \
  -R 'attribution_(specialized|shared)_callee_gpu' >"$out/copies-ctest.txt" 2>&1 || fail=1
say "$(grep -E 'tests passed|tests failed|region |total:' "$out/copies-ctest.txt")"
say "copies-check: $([ $fail = 0 ] && echo ok || echo FAILED) in $(($(date +%s) - start)) s"
exit $fail

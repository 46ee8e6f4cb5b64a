#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): the whole build, the gpu-labelled tests (the Triton probe
# test among them), the early-CUPTI-initialisation crash check and the probe multi-run benchmark,
# in one call of under ten minutes. Logs go under $OUT and are packed into $OUT/results.tgz (the
# device tool brings back at most 8 files).
set -uo pipefail
out="${OUT:-/tmp/argus-out}"
mkdir -p "$out"
start=$(date +%s)
since() { echo "$(($(date +%s) - start)) s"; }
export LD_LIBRARY_PATH=/tmp/argus-deps/usr/lib/x86_64-linux-gnu
timeout 200 scripts/gpu/device-build.sh > "$out/build.log" 2>&1
echo "build: exit $? ($(since))"; grep -E "error" "$out/build.log" | head -5
(cd /tmp/argus-build && timeout 330 ctest -L gpu --output-on-failure > "$out/ctest-gpu.log" 2>&1)
echo "ctest -L gpu: exit $? ($(since))"
grep -E "tests passed|Failed|Passed|Skipped|\*\*\*" "$out/ctest-gpu.log" | tail -15
# The early CUPTI initialisation once crashed 5 of 80 programs (BENCHMARKS.md): keep checking.
N=40 MODES=early OUT="$out/stress" timeout 60 bash scripts/gpu/cupti-init-stress.sh 2>&1 | tail -1
OUT="$out/probe" timeout 150 bash scripts/gpu/probe-check.sh bench > "$out/probe.log" 2>&1
echo "probe bench: exit $? ($(since))"; tail -22 "$out/probe.log"
(cd "$out" && tar czf /tmp/argus-results.tgz . && find "$out" -mindepth 1 -delete &&
  mv /tmp/argus-results.tgz "$out/results.tgz")

#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): the Triton path, the gpu-labelled tests and the probe
# multi-run benchmark, in one call. Writes under $OUT.
set -uo pipefail
out="${OUT:-/tmp/argus-out}"
mkdir -p "$out"
start=$(date +%s)
OUT="$out/triton" bash scripts/gpu/triton-check.sh > "$out/triton.log" 2>&1
echo "triton-check: exit $? ($(($(date +%s) - start)) s)"; tail -25 "$out/triton.log"
export LD_LIBRARY_PATH=/tmp/argus-deps/usr/lib/x86_64-linux-gnu
cmake --build /tmp/argus-build -j "$(nproc)" > "$out/build-all.log" 2>&1 || tail -20 "$out/build-all.log"
(cd /tmp/argus-build && timeout 240 ctest -L gpu --output-on-failure > "$out/ctest-gpu.log" 2>&1)
echo "ctest -L gpu: exit $? ($(($(date +%s) - start)) s)"; grep -E "tests passed|Failed|Passed|\*\*\*" "$out/ctest-gpu.log" | tail -15
OUT="$out/probe" timeout 200 bash scripts/gpu/probe-check.sh bench > "$out/probe.log" 2>&1
echo "probe bench: exit $? ($(($(date +%s) - start)) s)"; cat "$out/probe/summary.md" 2>/dev/null || tail -20 "$out/probe.log"

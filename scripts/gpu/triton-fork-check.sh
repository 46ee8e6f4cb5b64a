#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): the Triton GPU tests in one call of under ten minutes:
# argus_triton_fork_gpu (a program version compiled from an edited TTGIR) and
# argus_triton_probe_latency_gpu (TMA probes on the Triton matmul; about 20 s per probe process).
# Builds only the argus binary and the injection library; logs under $OUT.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
start=$(date +%s)
gpu_build build.log argus argus_inject
echo "built in $(($(date +%s) - start)) s"
# $TESTS picks (name:seconds ...).
for t in ${TESTS:-argus_triton_fork_gpu:220 argus_triton_probe_latency_gpu:300}; do
  name=${t%%:*}
  (cd "$B" && timeout "${t##*:}" ctest -R "^$name\$" --output-on-failure >"$out/$name.log" 2>&1)
  echo "== $name: exit $? ($(($(date +%s) - start)) s)"
  grep -E "^(ok|FAIL|SKIP)|checks? (passed|failed)|Passed|Failed|argus .* failed|Error|error" \
    "$out/$name.log" | head -40
done

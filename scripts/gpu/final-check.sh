#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): what a change must pass there, in stages that fit the
# device tool's ten-minute calls. Usage: final-check.sh [STAGE...] (default: every stage)
#   build     device-build.sh of every target into $ARGUS_BUILD_DIR (default build-gpu/ in the
#             checkout, which git ignores, so a machine still warm keeps it for the next call)
#   tests     ctest -L gpu: every GPU test
#   overhead  bench/trace_overhead/paired.sh: the tracing overhead, paired, with its intervals
#   cases     the golden report cases only a GPU makes (tests/data/reports/README.md): queries on
#             examples/tma_gemm, captured into $OUT/cases.tgz by capture-report-case.py
#   stress    the early CUPTI initialisation check (cupti-init-stress.sh)
#   probes    the probe multi-run benchmark (probe-check.sh bench)
# Logs go under $OUT, packed into $OUT/results.tgz at the end (the device tool brings back at
# most 8 files); each stage prints its summary and its time.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
out="${OUT:-/tmp/argus-out}"
mkdir -p "$out"
export ARGUS_BUILD_DIR="${ARGUS_BUILD_DIR:-$root/build-gpu}"
export LD_LIBRARY_PATH=/tmp/argus-deps/usr/lib/x86_64-linux-gnu
export PATH=/usr/local/cuda/bin:$PATH
B="$ARGUS_BUILD_DIR"
start=$(date +%s)
since() { echo "$(($(date +%s) - start)) s"; }
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(build tests overhead cases stress probes)

for stage in "${stages[@]}"; do
  case "$stage" in
    build)
      timeout 300 scripts/gpu/device-build.sh >"$out/build.log" 2>&1
      echo "build: exit $? ($(since))"; grep -E "error" "$out/build.log" | head -5 ;;
    tests)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv \
        >"$out/gpu.txt" 2>&1
      (cd "$B" && timeout 420 ctest -L gpu --output-on-failure >"$out/ctest-gpu.log" 2>&1)
      echo "ctest -L gpu: exit $? ($(since))"
      grep -E "tests passed|Failed|Passed|Skipped|\*\*\*" "$out/ctest-gpu.log" | tail -20 ;;
    overhead)
      timeout 240 bash bench/trace_overhead/paired.sh "$B/argus" /tmp/argus-paired \
        >"$out/paired.log" 2>&1
      echo "paired.sh: exit $? ($(since))"; tail -20 "$out/paired.log" ;;
    cases)
      export ARGUS_BIN="$B/argus"
      cases=/tmp/argus-cases
      rm -rf "$cases" && mkdir -p "$cases"
      w=$(mktemp -d)
      "$B/argus" query --program examples/tma_gemm/argus.yaml --region mainloop \
        --signals duration,occurrences,kernel_duration --workspace "$w" --json \
        >"$w/report.json" 2>"$out/cases-query.log"
      echo "cases query: exit $?"
      for s in duration occurrences kernel_duration; do
        python3 scripts/gpu/capture-report-case.py "$w" "$s" "$cases/tma_gemm_$s" \
          --report "$w/report.json" 2>&1 | tail -2
      done
      w=$(mktemp -d)
      "$B/argus" query --program examples/tma_gemm/argus.yaml --region mainloop \
        --signals op_latency --workspace "$w" --json >"$w/report.json" 2>>"$out/cases-query.log"
      echo "cases op_latency query: exit $?"
      python3 scripts/gpu/capture-report-case.py "$w" op_latency "$cases/tma_gemm_op_latency" \
        --report "$w/report.json" 2>&1 | tail -2
      (cd "$cases" && tar czf "$out/cases.tgz" .)
      echo "cases: $(du -sh "$out/cases.tgz" | cut -f1) ($(since))" ;;
    stress)
      # The early CUPTI initialisation once crashed 5 of 80 programs: keep checking.
      N=40 MODES=early OUT="$out/stress" timeout 60 bash scripts/gpu/cupti-init-stress.sh 2>&1 |
        tail -1 ;;
    probes)
      OUT="$out/probe" timeout 150 bash scripts/gpu/probe-check.sh bench >"$out/probe.log" 2>&1
      echo "probe bench: exit $? ($(since))"; tail -22 "$out/probe.log" ;;
    *) echo "final-check: unknown stage \`$stage\`; stages: build tests overhead cases stress probes" >&2
       exit 2 ;;
  esac
done
# Everything but the cases archive into one file.
(cd "$out" && tar czf /tmp/argus-results.tgz --exclude=cases.tgz . &&
  find "$out" -mindepth 1 ! -name cases.tgz -delete && mv /tmp/argus-results.tgz "$out/results.tgz")

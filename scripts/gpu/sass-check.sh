#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): builds the per-PC evidence collectors and runs
# examples/nested_regions three times, each collector alone (they perturb each other):
#   1. libargus_cupti_sass.so with CUPTI SASS metrics (per-PC warp/thread instructions; variants),
#   2. libargus_cupti_sass.so with CUPTI PC sampling (stall reasons per PC),
#   3. ncu --clock-control none --section SourceCounters (per-PC source counters),
# then argus_pc_compare checks that CUPTI's per-PC executed instructions equal ncu's per PC and
# that the totals agree with ncu's smsp__inst_executed.sum. Clocks and device settings are never
# changed. Writes under $OUT (default /tmp/argus-out): summary.txt, compare.json, ncu_source.csv,
# ncu_raw.csv, evidence.tgz (collection folders, cubins, run logs, ncu report, build log).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-/tmp/argus-out}"
mkdir -p "$out"
work=/tmp/argus-sass-check
rm -rf "$work"
mkdir -p "$work/logs"
summary="$out/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
finish() {
  tar czf "$out/evidence.tgz" -C "$work" . 2>/dev/null
  exit "${1:-0}"
}
export PATH=/usr/local/cuda/bin:$PATH

export LD_LIBRARY_PATH="/tmp/argus-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
targets=(argus_cupti_sass argus_pc_compare argus_example_nested_regions argus_evidence_tests
  argus_backend_ncu_tests argus_inject)
say "== build ($(nproc) cores): ${targets[*]}"
if ! build=$("$root"/scripts/gpu/device-build.sh "${targets[@]}" 2>"$work/logs/build.log"); then
  tail -40 "$work/logs/build.log" | tee -a "$summary"
  finish 1
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader |
  tee -a "$summary"

say "== unit tests"
for t in src/evidence/argus_evidence_tests src/backends/ncu/argus_backend_ncu_tests; do
  "$build/$t" >"$work/logs/$(basename "$t").log" 2>&1
  say "$(basename "$t"): exit $? ($(grep -E '^\[  (PASSED|FAILED) ' "$work/logs/$(basename "$t").log" | tr '\n' ' '))"
done

exe="$build/examples/argus_example_nested_regions"
lib="$build/src/backends/cupti_sass/libargus_cupti_sass.so"
kernel=nested_regions
durations() { # collection dir -> "kernel duration_ns" lines
  python3 -c 'import json,sys
for l in open(sys.argv[1]):
    k=json.loads(l); print(" ", k["kernel"], k["duration_ns"], "ns")' "$1/kernels.jsonl" 2>/dev/null
}

say "== native run"
elapsed() { echo "$((($(date +%s%N) - $1) / 1000000)) ms"; }
start=$(date +%s%N)
"$exe" >"$work/logs/native.log" 2>&1
say "native: exit $? in $(elapsed "$start"): $(tail -1 "$work/logs/native.log")"

collect() { # family dir extra-env...: one run of the example under libargus_cupti_sass.so
  local family=$1 dir=$2
  shift 2
  say "== $family run ($*)"
  local start
  start=$(date +%s%N)
  env CUDA_INJECTION64_PATH="$lib" ARGUS_OUT_DIR="$dir" ARGUS_PC_VERBOSE=1 CUDA_MODULE_LOADING=EAGER \
    "$@" timeout 45 "$exe" >"$work/logs/$family.log" 2>&1
  say "$family: exit $? in $(elapsed "$start"): $(grep -E 'PASS|FAIL' "$work/logs/$family.log" | tail -1)"
  ls -la "$dir" | tee -a "$summary"
  say "errors.txt: $(head -20 "$dir/errors.txt" 2>/dev/null)"
  say "launches:"
  head -5 "$dir/launches.jsonl" 2>/dev/null | tee -a "$summary"
  say "kernel durations:"
  durations "$dir" | tee -a "$summary"
  for cubin in "$dir"/cubin-*.cubin; do
    [ -f "$cubin" ] || continue
    say "$(basename "$cubin"): $(file -b "$cubin" | cut -c1-60); functions: $(nvdisasm -c "$cubin" 2>&1 | grep -oE '^\s*\.text\.[A-Za-z0-9_]+' | tr -d ' \t' | tr '\n' ' ')"
  done
}
sass_env=(ARGUS_SASS_METRICS=smsp__sass_inst_executed,smsp__sass_thread_inst_executed,smsp__sass_thread_inst_executed_pred_on
  ARGUS_SASS_GRANULARITY=gpu)
collect sass "$work/sass" "${sass_env[@]}"
collect pcs "$work/pcs" ARGUS_PC_SAMPLING=1
head -c 1500 "$work/sass/pc-0.json" >"$work/logs/sass_pc0_head.txt" 2>/dev/null

say "== ncu"
ncu --version 2>&1 | tail -1 | tee -a "$summary"
ncu --help >"$work/logs/ncu_help.txt" 2>&1
mkdir -p "$work/ncu"
start=$(date +%s%N)
timeout 100 ncu --clock-control none --section SourceCounters \
  --metrics smsp__inst_executed.sum,smsp__thread_inst_executed.sum --import-source no \
  -k "$kernel" -c 1 -f -o "$work/ncu/report" "$exe" >"$work/logs/ncu_run.log" 2>&1
say "ncu profile: exit $? in $(elapsed "$start")"
tail -5 "$work/logs/ncu_run.log" | tee -a "$summary"
ncu --import "$work/ncu/report.ncu-rep" --page source --print-source sass --csv \
  >"$out/ncu_source.csv" 2>"$work/logs/ncu_source.err"
say "ncu source export: exit $?, $(wc -l <"$out/ncu_source.csv") lines; head:"
head -4 "$out/ncu_source.csv" | cut -c1-400 | tee -a "$summary"
ncu --import "$work/ncu/report.ncu-rep" --page raw --csv >"$out/ncu_raw.csv" 2>"$work/logs/ncu_raw.err"
say "ncu raw export: exit $?, $(wc -l <"$out/ncu_raw.csv") lines"

# Variants, compared too (inject.cpp's ARGUS_SASS_* variables). Seen on the H200 with
# ARGUS_SASS_GRANULARITY=sm: records for every PC, every value 0, whether enabled at the launch or
# at context creation and flushed in the launch's exit callback or later.
collect sass_one "$work/sass_one" ARGUS_SASS_METRICS=smsp__sass_inst_executed ARGUS_SASS_GRANULARITY=gpu
collect sass_sm "$work/sass_sm" "${sass_env[@]}" ARGUS_SASS_GRANULARITY=sm
collect sass_ctx_now "$work/sass_ctx_now" "${sass_env[@]}" ARGUS_SASS_ENABLE_AT=context \
  ARGUS_SASS_FLUSH=launch

status=1
for variant in sass sass_one sass_sm sass_ctx_now; do
  say "== compare $variant (CUPTI SASS metrics vs ncu, PC sampling summary)"
  "$build/src/backends/ncu/argus_pc_compare" --cupti "$work/$variant" \
    --ncu-source "$out/ncu_source.csv" --ncu-raw "$out/ncu_raw.csv" --sampling "$work/pcs" \
    --kernel "$kernel" --out "$work/compare_$variant.json" >"$work/logs/compare_$variant.txt" 2>&1
  rc=$?
  grep -vE '^    mismatch' "$work/logs/compare_$variant.txt" | tee -a "$summary"
  grep -E '^    mismatch' "$work/logs/compare_$variant.txt" | head -6 | tee -a "$summary"
  say "compare $variant: exit $rc"
  if [ $rc = 0 ] && [ $status != 0 ]; then
    status=0
    cp "$work/compare_$variant.json" "$out/compare.json"
  fi
done
[ -f "$out/compare.json" ] || cp "$work/compare_sass.json" "$out/compare.json" 2>/dev/null
finish "$status"

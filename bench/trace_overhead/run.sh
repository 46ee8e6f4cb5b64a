#!/usr/bin/env bash
# Region-tracing overhead on the seed microbenchmark (BENCHMARKS.md, "Region tracing overhead").
#
# Usage: bench/trace_overhead/run.sh ARGUS OUT
#   ARGUS  the argus binary (its `build` verb makes the trace_free and full_trace variants)
#   OUT    output folder
# Environment (optional):
#   INJECT       libargus_inject.so (default: $ARGUS_INJECT_LIB, else looked up in ARGUS's build tree)
#   INNER        inner-loop sizes (default 8,16,32,64,128,256,512)
#   REPS WARMUP  timed / untimed launches per configuration (default 200 / 20)
#   TABLE        memory variant's table size, a power of two (default 4096)
#   PYTHON       python3 with Triton and torch, for the Proton comparison (default python3)
#   SKIP_PROTON=1  only the Argus part
#   TIME_BASE    trace timestamps: globaltimer (default) or clock64
#   PASS_OPTION  one KEY=VALUE for the trace pass, e.g. overflow=clamp
#
# Both variants run under the injection library (same CUPTI kernel-activity collection), so the
# compared numbers are CUPTI's GPU kernel durations; the harness's event timings are printed too
# (for full_trace they include the library's per-launch buffer set-up).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
bench_paths 20 "$@"
inner="${INNER:-8,16,32,64,128,256,512}"
reps="${REPS:-200}"
warmup="${WARMUP:-20}"
table="${TABLE:-4096}"
python="${PYTHON:-python3}"

echo "argus:  $argus"
echo "inject: $inject"
echo "out:    $out"

for variant in trace_free full_trace; do
  echo "== build $variant"
  "$argus" build --program "$here/argus.yaml" --variant "$variant" -o "$out/seed_$variant" \
    ${TIME_BASE:+--time-base "$TIME_BASE"} ${PASS_OPTION:+--pass-option "$PASS_OPTION"}
done

for variant in trace_free full_trace; do
  echo "== run $variant (inner $inner, $warmup + $reps launches each)"
  rm -rf "${out:?}/$variant"
  # 64 records per warp fit exactly; only the first 4 launches keep their trace files.
  CUDA_INJECTION64_PATH="$inject" ARGUS_TRACE_DIR="$out/$variant" ARGUS_TRACE_CAPACITY=64 \
    ARGUS_TRACE_MAX_FILES=4 \
    "$out/seed_$variant/trace_overhead" --kernel both --inner "$inner" --reps "$reps" \
    --warmup "$warmup" \
    --table "$table" | tee "$out/$variant.jsonl"
  if [ -s "$out/$variant/errors.txt" ]; then
    echo "run.sh: $variant: injection errors:" >&2
    cat "$out/$variant/errors.txt" >&2
  fi
done

if [ "${SKIP_PROTON:-0}" != 1 ]; then
  echo "== Proton (Triton) equivalent: CUPTI kernel durations"
  PYTHONUNBUFFERED=1 "$python" "$here/proton_equivalent.py" --inner "$inner" --out "$out/proton" \
    --inject "$inject" --launches "$reps" --warmup "$warmup" | tee "$out/proton_cupti.txt" || true
  echo "== Proton (Triton) equivalent: triton.testing.do_bench (includes Proton's host work)"
  PYTHONUNBUFFERED=1 "$python" "$here/proton_equivalent.py" --inner "$inner" \
    --out "$out/proton" | tee "$out/proton_do_bench.txt" || true
fi

echo
echo "== Argus region tracing: full_trace vs trace_free (CUPTI kernel durations, medians)"
python3 "$here/summarize.py" "$out" | tee "$out/summary.txt"
python3 "$here/summarize.py" "$out" --markdown > "$out/summary.md" || true
if [ "${SKIP_PROTON:-0}" != 1 ]; then
  echo
  echo "== Proton scopes (CUPTI kernel durations, medians)"
  sed -n '/^kernel /,$p' "$out/proton_cupti.txt"
fi

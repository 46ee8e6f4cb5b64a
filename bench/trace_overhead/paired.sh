#!/usr/bin/env bash
# Region-tracing overhead on the seed microbenchmark, measured in pairs (BENCHMARKS.md, "Region
# tracing overhead"): each launch of the full_trace build's kernel runs next to one of the
# trace_free build's, in one process under libargus_inject.so (harness --pair), and the figure is
# the median of the pairs' CUPTI duration differences with its 95 % confidence interval
# (paired.py). run.sh compares medians of two separate runs instead, which a clock drift between
# the runs moves (about 0.2 us at inner 512 on the H200).
#
# Usage: bench/trace_overhead/paired.sh ARGUS OUT
#   ARGUS  the argus binary (its `build` verb makes both variants)
#   OUT    output folder
# Environment (optional): INJECT (libargus_inject.so; default: $ARGUS_INJECT_LIB, else found in
#   ARGUS's build tree), INNER (default 8,64,512), REPS (pairs per configuration, default 200),
#   KERNELS (compute|memory|both, default both), PASS_OPTION (one KEY=VALUE for the trace pass).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
bench_paths 15 "$@"
for variant in trace_free full_trace; do
  "$argus" build --program "$here/argus.yaml" --variant "$variant" -o "$out/seed_$variant" \
    ${PASS_OPTION:+--pass-option "$PASS_OPTION"} >/dev/null
done
rm -rf "${out:?}/paired"
CUDA_INJECTION64_PATH="$inject" ARGUS_TRACE_DIR="$out/paired" ARGUS_TRACE_CAPACITY=64 \
  ARGUS_TRACE_MAX_FILES=2 "$out/seed_full_trace/trace_overhead" --kernel "${KERNELS:-both}" \
  --inner "${INNER:-8,64,512}" --reps "${REPS:-200}" --warmup 20 \
  --pair "$out/seed_trace_free/seed_kernel.cubin" >"$out/paired.jsonl" 2>"$out/paired.err" || {
  status=$?
  cat "$out/paired.err" >&2
  exit "$status"
}
python3 "$here/paired.py" "$out/paired" | tee "$out/paired.txt"

#!/usr/bin/env bash
# Region-tracing overhead on a real program (BENCHMARKS.md, "Tracing real kernels"): a program
# spec's kernel built trace-free and fully traced, with regions derived into it (`--derive`), the
# two executables run in alternating order, ROUNDS times each, under libargus_inject.so. Per
# launch index the traced run's CUPTI kernel duration is paired with the trace-free run's of the
# same round, and real_paired.py reports the median difference with its 95 % interval, whether
# both runs printed the same result lines, and the SASS difference of the two builds outside the
# recording instructions (sass_diff.py).
#
# Usage: bench/trace_overhead/real_paired.sh ARGUS OUT SPEC KERNEL DERIVE [-- PROGRAM ARGS...]
#   ARGUS   the argus binary        OUT  output folder
#   SPEC    the program spec        KERNEL  the kernel to trace and time (mangled name)
#   DERIVE  selectors for --derive (e.g. loops,ops; "-" for the spec's own regions only)
#   PROGRAM ARGS  the executable's arguments (default: none); ROUNDS (default 10) runs per side.
# Environment: INJECT (libargus_inject.so, else found beside ARGUS), CAPACITY (records per warp
# slot, default 1024), RESULT_GREP (an extended regex: the output lines that must be equal in both
# builds; default: every stdout line, numbers masked on lines that report times or rates).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
if [ $# -lt 5 ]; then
  sed -n 2,17p "$0"
  exit 2
fi
argus="$(realpath "$1")"
out="$(mkdir -p "$2" && realpath "$2")"
spec="$3"
kernel="$4"
derive="$5"
shift 5
[ "${1:-}" = "--" ] && shift
inject="$(find_inject "$argus")" || exit 2
derive_args=()
[ "$derive" != "-" ] && derive_args=(--derive "$derive")
for variant in trace_free full_trace; do
  rm -rf "${out:?}/$variant"
  "$argus" build --program "$spec" --variant "$variant" --kernel "$kernel" "${derive_args[@]}" \
    -o "$out/$variant" >"$out/$variant.build.txt"
done
exe_of() { sed -n 's/^built .*: //p' "$out/$1.build.txt"; }
free_exe="$(exe_of trace_free)"
traced_exe="$(exe_of full_trace)"
for round in $(seq 1 "${ROUNDS:-10}"); do
  # Alternate which side runs first, so that a drift over the rounds falls on both.
  if [ $((round % 2)) -eq 1 ]; then order="trace_free full_trace"; else order="full_trace trace_free"; fi
  for variant in $order; do
    exe="$free_exe"
    [ "$variant" = full_trace ] && exe="$traced_exe"
    dir="$out/runs/$variant-$round"
    rm -rf "$dir" && mkdir -p "$dir"
    # A Triton program compiles its kernel at launch: into a cache of the variant's own, where
    # its cubin is found below.
    TRITON_CACHE_DIR="$out/$variant/triton-cache" \
      CUDA_INJECTION64_PATH="$inject" ARGUS_TRACE_DIR="$dir" ARGUS_TRACE_MAX_FILES=1 \
      ARGUS_TRACE_CAPACITY="${CAPACITY:-1024}" \
      "$exe" "$@" >"$dir/stdout.txt" 2>"$dir/stderr.txt" || {
      echo "real_paired: $variant round $round exited $? (see $dir/stderr.txt)" >&2
      exit 1
    }
  done
done
# nvcc's cubin beside the executable, or the one Triton compiled into the variant's cache.
cubin_of() {
  { ls "$out/$1"/*.cubin; find "$out/$1/triton-cache" -name "$kernel.cubin"; } 2>/dev/null | head -1
}
free_cubin="$(cubin_of trace_free)"
traced_cubin="$(cubin_of full_trace)"
python3 "$here/real_paired.py" --kernel "$kernel" ${RESULT_GREP:+--result-grep "$RESULT_GREP"} \
  --sass "$free_cubin" "$traced_cubin" "$out/runs" | tee "$out/real_paired.txt"

#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs), after $B is built (source scripts/gpu/lib.sh; gpu_setup;
# gpu_build ...), or builds it: where the seed compute kernel's warps stall, per SASS instruction,
# in the trace-free build and the traced one (the trace pass's defaults), with Nsight Compute's
# source counters (warp-state sampling; `--clock-control none`, clocks as found). The third launch of
# each build at each $INNER size (default "8 512"). Under ncu the traced build runs its record
# code without storing (ncu's injection replaces libargus_inject.so, so the trace buffer stays
# unset and lane 0's store is predicated off): the figures are the instructions' own stalls.
# Writes $OUT/stall-<build>-<inner>.csv (ncu's source page, SASS, CSV) and the reports.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/gpu/lib.sh"
gpu_setup
[ -n "${B:-}" ] || gpu_build stall-build.log argus argus_inject
spec=bench/trace_overhead/argus.yaml
w=/tmp/stall-profile
rm -rf "$w"; mkdir -p "$w"
"$B/argus" build --program $spec --variant trace_free -o $w/free >/dev/null || exit 1
"$B/argus" build --program $spec --variant full_trace -o $w/traced >/dev/null || exit 1
for build in free traced; do
  for inner in ${INNER:-8 512}; do
    rep="$out/stall-$build-$inner"
    ncu --clock-control none --section SourceCounters --section WarpStateStats \
      -k seed_compute --launch-skip 2 -c 1 -f -o "$rep" "$w/$build/trace_overhead" --kernel compute \
      --inner "$inner" --reps 1 --warmup 2 >"$rep.log" 2>&1 || { tail -5 "$rep.log"; continue; }
    ncu -i "$rep.ncu-rep" --page source --csv --print-source sass >"$rep.csv" 2>"$rep.err" ||
      tail -3 "$rep.err"
    echo "$build inner $inner: $(wc -l <"$rep.csv") source lines"
  done
done

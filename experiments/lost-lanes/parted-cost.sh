#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): what recording the occurrences begun without lane 0
# costs (lower_markers_to_trace's parted=record against the default parted=count). Builds
# divergent_lanes and nested_regions as trace_free and as full_trace with each mode, runs every
# build RUNS times (alternating) under libargus_inject.so and prints each build's median CUPTI
# kernel duration (one launch per run). Needs the build from device-build.sh in /tmp/argus-build.
set -uo pipefail
out="${OUT:-/tmp/argus-out}/parted-cost"
mkdir -p "$out"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
runs="${RUNS:-30}"
argus=/tmp/argus-build/argus
inject=/tmp/argus-build/src/backends/region_trace/libargus_inject.so
declare -A exe
for spec in tests/gpu_query/divergent_lanes examples/nested_regions; do
  name=$(basename "$spec")
  for mode in free count record; do
    dir="$out/$name-$mode"
    if [ "$mode" = free ]; then
      "$argus" build --program "$root/$spec/argus.yaml" --variant trace_free -o "$dir" > "$dir.log" 2>&1
    else
      "$argus" build --program "$root/$spec/argus.yaml" --variant full_trace \
        --pass-option "parted=$mode" -o "$dir" > "$dir.log" 2>&1
    fi || { echo "$name $mode: build failed"; tail -3 "$dir.log"; continue; }
    exe[$name-$mode]=$(sed -n 's/^built .*: //p' "$dir.log" | tail -1)
  done
done
for ((i = 0; i < runs; ++i)); do
  for key in "${!exe[@]}"; do
    CUDA_INJECTION64_PATH="$inject" ARGUS_TRACE_DIR="$out/$key-trace-$i" "${exe[$key]}" \
      > /dev/null 2>> "$out/$key-runs.log"
  done
done
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
for key in sorted({os.path.basename(p).rsplit("-trace-", 1)[0] for p in glob.glob(f"{out}/*-trace-*")}):
    ns = []
    for path in glob.glob(f"{out}/{key}-trace-*/kernels.jsonl"):
        for line in open(path):
            k = json.loads(line)
            ns.append(k["end_ns"] - k["start_ns"])
    if ns:
        print(f"{key}: median {statistics.median(ns) / 1000:.2f} us over {len(ns)} launches "
              f"(min {min(ns) / 1000:.2f}, max {max(ns) / 1000:.2f})")
PY

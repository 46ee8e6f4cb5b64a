#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): checks the trace pass's count of occurrences run without
# lane 0 (argus_compact_layout_gpu, whose LOST table has the expected counts) and the region
# timings (argus_query_timings_gpu), then runs compute-sanitizer's synccheck and memcheck on the
# traced builds of the examples whose markers get the count (warp_specialized, nested_regions,
# divergent_lanes), without the injection library (its CUPTI subscriber and the sanitizer's
# cannot share a process): the activemask/vote.sync sequences run all the same, only the records
# are not stored. Logs go under $OUT.
set -uo pipefail
out="${OUT:-/tmp/argus-out}"
mkdir -p "$out"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
start=$(date +%s)
since() { echo "$(($(date +%s) - start)) s"; }
export LD_LIBRARY_PATH=/tmp/argus-deps/usr/lib/x86_64-linux-gnu
timeout 240 scripts/gpu/device-build.sh > "$out/build.log" 2>&1
echo "build: exit $? ($(since))"; grep -E "error" "$out/build.log" | head -5
(cd /tmp/argus-build && timeout 200 ctest -R "argus_compact_layout_gpu|argus_query_timings_gpu" \
  --output-on-failure > "$out/ctest.log" 2>&1)
echo "ctest: exit $? ($(since))"
grep -E "FAIL|tests passed|Passed|Failed" "$out/ctest.log" | tail -8
sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
for spec in examples/warp_specialized examples/nested_regions tests/gpu_query/divergent_lanes; do
  name=$(basename "$spec")
  /tmp/argus-build/argus build --program "$root/$spec/argus.yaml" --variant full_trace \
    -o "/tmp/sc-$name" > "$out/sc-build-$name.log" 2>&1 || { echo "$name: build failed"; continue; }
  exe=$(find "/tmp/sc-$name" -maxdepth 1 -type f -perm -u+x | head -1)
  for tool in synccheck memcheck; do
    timeout 120 "$sanitizer" --tool "$tool" --error-exitcode 9 "$exe" > "$out/sc-$tool-$name.log" 2>&1
    echo "$name $tool: exit $? ($(tail -1 "$out/sc-$tool-$name.log"))"
  done
done
echo "done ($(since))"

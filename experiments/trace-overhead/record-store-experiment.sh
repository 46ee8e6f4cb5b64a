#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): the seed tracing benchmark with record_store=leader (two
# store instructions per record, the default) and record_store=paired (one instruction, lanes 0
# and 1), alternating twice, compute and memory kernels at inner 8/64/512. summarize.py checks that
# every traced launch kept all 65,536 records with none dropped.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/gpu/lib.sh"
gpu_setup
ARGUS_BUILD_DIR="${ARGUS_BUILD_DIR:-/tmp/argus-build-rs}" gpu_build build.log argus argus_inject
for round in 1 2; do
  for mode in leader paired; do
    echo "=== round $round record_store=$mode"
    PASS_OPTION=record_store=$mode INNER=8,64,512 REPS=200 SKIP_PROTON=1 \
      bash bench/trace_overhead/run.sh "$B/argus" /tmp/rs-$mode-$round >"$out/bench-$mode-$round.log" 2>&1
    sed -n '/^kernel /,$p' /tmp/rs-$mode-$round/summary.txt | head -8
    grep -iE "records|dropped|problem" "$out/bench-$mode-$round.log" | head -3
    cp /tmp/rs-$mode-$round/summary.md "$out/summary-$mode-$round.md" 2>/dev/null
  done
done

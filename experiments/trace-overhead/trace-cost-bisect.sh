#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): where the tracing overhead of the seed compute kernel
# goes. Builds the full_trace variant, then variants of its PTX with one cost removed (argus build
# --ptx), and measures each against trace_free exactly as bench/trace_overhead/run.sh does (CUPTI
# kernel durations under libargus_inject.so, medians of 200 launches after 20 warm-ups).
#   full      the current instrumentation
#   notimer   timestamps replaced by constants (the records are still stored)
#   onestore  only the 16-byte timestamp store (meta/cta/iteration store removed)
#   lane0     leader = lane 0 (%laneid == 0) instead of activemask + elect.sync
#   nocount   the record counter stays 0 (every record goes to the slot's first place)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/gpu/lib.sh"
gpu_setup
ARGUS_BUILD_DIR=/tmp/argus-build-lead gpu_build build.log argus argus_inject
inject="$B/src/backends/region_trace/libargus_inject.so"
spec=bench/trace_overhead/argus.yaml
w=/tmp/bisect
rm -rf "$w"; mkdir -p "$w"
"$B/argus" build --program $spec --variant trace_free -o $w/free >/dev/null || exit 1
"$B/argus" build --program $spec --variant full_trace --pass-option record_layout=full -o $w/full >/dev/null || exit 1
ptx=$w/full/seed_kernel.ptx
sed -e 's/mov.u64 %argus_now, %globaltimer;/mov.u64 %argus_now, 7;/' \
    -e 's/mov.u64 %argus_b\([0-9]*\), %globaltimer;/mov.u64 %argus_b\1, 3;/' $ptx > $w/notimer.ptx
grep -v 'st.global.cs.v4.u32 \[%argus_addr+16\]' $ptx > $w/onestore.ptx
sed -e 's/elect.sync _|%argus_lead, %argus_t0;/mov.u32 %argus_t1, %laneid;\n\tsetp.eq.u32 %argus_lead, %argus_t1, 0;/' $ptx > $w/lane0.ptx
sed -e 's/@%argus_on add.u32 %argus_cnt, %argus_cnt, 1;//' $ptx > $w/nocount.ptx
for v in notimer onestore lane0 nocount; do
  "$B/argus" build --program $spec --variant original --ptx $w/$v.ptx -o $w/$v >"$w/$v.build.log" 2>&1 ||
    { echo "build $v failed"; tail -5 "$w/$v.build.log"; }
done
measure() { # variant exe -> $w/runs/<variant>/{trace_free.jsonl,...} layout for summarize.py
  local name=$1 exe=$2
  local dir=$w/runs/$name
  mkdir -p "$dir"
  CUDA_INJECTION64_PATH="$inject" ARGUS_TRACE_DIR="$dir/full_trace" ARGUS_TRACE_CAPACITY=64 \
    ARGUS_TRACE_MAX_FILES=2 "$exe" --kernel compute --inner 8,64,512 --reps 200 --warmup 20 \
    > "$dir/full_trace.jsonl" 2>"$dir/err.txt"
  cp -r $w/runs/base/trace_free "$dir/trace_free"; cp $w/runs/base/trace_free.jsonl "$dir/"
}
for round in 1 2; do
  mkdir -p $w/runs/base
  CUDA_INJECTION64_PATH="$inject" ARGUS_TRACE_DIR="$w/runs/base/trace_free" ARGUS_TRACE_CAPACITY=64 \
    $w/free/trace_overhead --kernel compute --inner 8,64,512 --reps 200 --warmup 20 > $w/runs/base/trace_free.jsonl
  for v in full notimer onestore lane0 nocount; do
    measure "$v-$round" "$w/$v/trace_overhead"
    echo "== $v (round $round)"
    python3 bench/trace_overhead/summarize.py "$w/runs/$v-$round" 2>/dev/null | grep -E '^seed_compute'
  done
  rm -rf $w/runs/base-$round; cp -r $w/runs/base $w/runs/base-$round; rm -rf $w/runs/base
done

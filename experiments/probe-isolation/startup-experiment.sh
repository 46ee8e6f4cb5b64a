#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): where a probe process's start-up time goes when eight
# start at once (issue 7: 'set_up_held -> turn_asked' is about 1 s per process at eight, the
# whole process about 0.43 s one at a time). Starts the TMA GEMM's full_trace executable
# $N (default 8) at once and alone, under each setting in $MODES (default below), $REPEATS
# rounds (default 3), the modes alternating within a round, and prints per mode the median wall
# time of the N-at-once batch and of one process alone:
#   plain    no injection library
#   inject   libargus_inject.so, as a probe collection runs it (CUDA_MODULE_LOADING=EAGER,
#            ARGUS_GPU_TURN)
#   notimes  inject with ARGUS_TRACE_KERNEL_TIMES=0 (no CUPTI activity)
#   noturn   inject without ARGUS_GPU_TURN
#   lazy     inject with CUDA_MODULE_LOADING=LAZY
#   conn1    plain with CUDA_DEVICE_MAX_CONNECTIONS=1 (one hardware work queue: fewer channels to
#            create with the context)
#   injconn1 inject with CUDA_DEVICE_MAX_CONNECTIONS=1
# Usage: N=8 REPEATS=3 MODES="plain inject notimes" startup-experiment.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/gpu/lib.sh"
gpu_setup
gpu_build startup-build.log argus argus_inject
inject="$B/src/backends/region_trace/libargus_inject.so"
w=/tmp/startup
rm -rf "$w"; mkdir -p "$w"
"$B/argus" build --program examples/tma_gemm/argus.yaml --variant full_trace -o "$w/v" >"$w/build.log" 2>&1 ||
  { tail -20 "$w/build.log"; exit 1; }
exe="$w/v/tma_gemm"
n="${N:-8}"
start_one() {  # start_one MODE DIR: one process, its wall time (s) into DIR/wall
  local mode="$1" d="$2" env=()
  mkdir -p "$d"
  case "$mode" in
    plain) ;;
    inject) env=(CUDA_INJECTION64_PATH="$inject" CUDA_MODULE_LOADING=EAGER ARGUS_GPU_TURN="$w/turn") ;;
    notimes) env=(CUDA_INJECTION64_PATH="$inject" CUDA_MODULE_LOADING=EAGER ARGUS_GPU_TURN="$w/turn"
      ARGUS_TRACE_KERNEL_TIMES=0) ;;
    noturn) env=(CUDA_INJECTION64_PATH="$inject" CUDA_MODULE_LOADING=EAGER) ;;
    lazy) env=(CUDA_INJECTION64_PATH="$inject" CUDA_MODULE_LOADING=LAZY ARGUS_GPU_TURN="$w/turn") ;;
    conn1) env=(CUDA_DEVICE_MAX_CONNECTIONS=1) ;;
    injconn1) env=(CUDA_INJECTION64_PATH="$inject" CUDA_MODULE_LOADING=EAGER ARGUS_GPU_TURN="$w/turn"
      CUDA_DEVICE_MAX_CONNECTIONS=1) ;;
    *) echo "unknown mode $mode (plain inject notimes noturn lazy conn1 injconn1)"; exit 2 ;;
  esac
  local t0 t1
  t0=$(date +%s.%N)
  env "${env[@]}" ARGUS_TRACE_DIR="$d" "$exe" >"$d/out" 2>&1 || echo "exit $? in $d" >>"$w/failures"
  t1=$(date +%s.%N)
  echo "$t0 $t1" >"$d/wall"
}
modes="${MODES:-plain inject notimes noturn lazy}"
for rep in $(seq "${REPEATS:-3}"); do
  for mode in $modes; do
    t0=$(date +%s.%N)
    for i in $(seq "$n"); do start_one "$mode" "$w/$mode/$rep/at_once/$i" & done
    wait
    t1=$(date +%s.%N)
    echo "$t0 $t1" >"$w/$mode/$rep/at_once/batch"
    start_one "$mode" "$w/$mode/$rep/alone"
  done
done
[ -f "$w/failures" ] && { echo "failed runs:"; head "$w/failures"; }
python3 - "$w" "$modes" "$n" <<'PY'
import pathlib, statistics, sys
w, modes, n = pathlib.Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3]
def span(p):
    a, b = map(float, p.read_text().split())
    return b - a
print(f"| mode | {n} at once, batch (s, median) | per process at once (s, median) | alone (s, median) |")
print("| --- | --- | --- | --- |")
for m in modes:
    batch = [span(p) for p in sorted((w / m).glob("*/at_once/batch"))]
    each = [span(p) for p in sorted((w / m).glob("*/at_once/*/wall"))]
    alone = [span(p) for p in sorted((w / m).glob("*/alone/wall"))]
    print(f"| {m} | {statistics.median(batch):.3f} | {statistics.median(each):.3f} | "
          f"{statistics.median(alone):.3f} |")
PY

#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): the Triton probe query of
# tests/gpu_probe/triton_probe_test.py, watched. Every 10 s it records the process tree, the GPU's
# utilization and the turn locks; after $DIAG_HANG_S seconds (default 60) it takes the stacks of
# every process of the run (kernel wait channel, and gdb's native backtraces where gdb exists),
# stops the run and keeps the workspace's small files (task logs, run records). Finds where a
# hanging probe waits: a GPU kernel that never finishes (utilization stays 100 %) or a process
# waiting for the turn (flock in its wait channel).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/gpu/lib.sh"
gpu_setup "${OUT:-/tmp/argus-out}/triton-diag"
gpu_build build.log argus argus_inject
ws=/tmp/argus-ws-triton-diag
rm -rf "$ws"
ARGUS_TRACE_VERBOSE=1 "$B/argus" query --program examples/triton_matmul/argus.yaml \
  --kernel matmul_tma_argus --region mainloop --signals op_latency --scope 'iter=0|3' \
  --workspace "$ws" --require-gpu --json >"$out/query.json" 2>"$out/query.err" &
query=$!
hang=${DIAG_HANG_S:-60}
for ((t = 0; t <= hang; t += 10)); do
  kill -0 "$query" 2>/dev/null || break
  {
    echo "== t=$t s"
    ps -eo pid,ppid,stat,etimes,wchan:32,args --forest | grep -E "argus|python|run.py" | grep -v grep | cut -c1-220
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
    grep -F ":$(stat -c %i /tmp/argus-gpu*.turn 2>/dev/null | head -1) " /proc/locks || true
  } >>"$out/watch.txt" 2>&1
  sleep 10
done
if kill -0 "$query" 2>/dev/null; then
  echo "query still running after $hang s: taking stacks"
  for pid in $(pgrep -P "$query"; pgrep -f "run.py|argus_wrapper|python" ); do
    {
      echo "== pid $pid: $(tr '\0' ' ' </proc/"$pid"/cmdline | cut -c1-200)"
      grep -E "State|Threads" /proc/"$pid"/status
      for task in /proc/"$pid"/task/*; do echo "  tid ${task##*/}: $(cat "$task"/wchan)"; done
      timeout 30 gdb -p "$pid" -batch -ex "thread apply all bt 12" 2>&1 | grep -E "^#|^Thread" | head -120
    } >>"$out/stacks.txt" 2>&1
  done
  kill -- -"$query" 2>/dev/null; kill "$query" 2>/dev/null; pkill -f run.py
  sleep 2
else
  wait "$query"; echo "query exit $?"
fi
tail -5 "$out/query.err"
head -c 1500 "$out/query.json"; echo
(cd "$ws" 2>/dev/null && find . -type f -size -512k \( -name "*.log" -o -name "*.json" -o -name "*.jsonl" -o -name "*.txt" \) | head -400 | tar czf "$out/ws-small.tgz" -T -)

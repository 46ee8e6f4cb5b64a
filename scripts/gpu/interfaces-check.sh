#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs with .debs/slurm from fetch-deps.sh --slurm, and .whl
# with the mcp SDK's wheels for the machine's Python, docs/mcp.md): the GPU checks of the agent
# and cluster interfaces.
#   slurm    gpu_slurm_setup, then ctest's slurm tests: a one-node cluster whose node has the real
#            GPU as its gres; the query test collects the GEMM's duration through Slurm (issue 35);
#   callee   tests/gpu_query/callee_regions_test.py: markers inside .func callees traced (30);
#   mcp      tests/gpu_query/mcp_query_test.py: run_query and compare_versions through the SDK's
#            client on examples/tma_gemm (issue 32).
# Usage: interfaces-check.sh [CHECK...] (default: all three). Each check's output goes to
# $OUT/<check>.txt, a line per check to $OUT/interfaces-summary.txt.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
cd "$gpu_root"
summary="$out/interfaces-summary.txt"
say() { echo "$*" | tee -a "$summary"; }
checks=("$@")
[ ${#checks[@]} -eq 0 ] && checks=(slurm callee mcp)
start=$(date +%s)
gpu_build interfaces-build.log argus argus_inject argus_cupti_sass argus_runtime_slurm_tests \
  argus_slurm_query_tests
say "built in $(($(date +%s) - start)) s"
fail=0
for c in "${checks[@]}"; do
  t=$(date +%s)
  case "$c" in
    slurm) (gpu_slurm_setup && ctest --test-dir "$B" -R slurm --output-on-failure) ;;
    callee) python3 tests/gpu_query/callee_regions_test.py "$B/argus" "$gpu_root" ;;
    mcp)
      if [ -d .whl ]; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
          --target /tmp/argus-site .whl/*.whl && export PYTHONPATH=/tmp/argus-site
      fi
      PYTHONUNBUFFERED=1 python3 tests/gpu_query/mcp_query_test.py "$B/argus" "$out"
      ;;
    *) echo "unknown check $c" ;;
  esac >"$out/$c.txt" 2>&1
  rc=$?
  [ $rc = 0 ] || fail=1
  say "$c: exit $rc in $(($(date +%s) - t)) s: $(grep -E 'tests passed|mcp:|PASS|FAIL' "$out/$c.txt" | tail -2 | tr '\n' ' ')"
done
exit $fail

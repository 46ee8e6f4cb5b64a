#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): queries on regions derived without editing the source
# (argus/ptx/derive.h, docs/regions-file.md).
#  1. examples/tma_gemm with `--derive ops`: the marked mainloop split into its derived
#     mbarrier_wait / wgmma parts, duration and inst_mix;
#  2. examples/cp_async_pipeline with `--derive ops`: its mainloop split by cp.async runs and
#     barriers, duration;
#  3. the CUTLASS programs of examples/cutlass_hopper/ (unmodified package sources; the wheel
#     carried in .whl/ when .venv/cutlass is not there) with `--derive loops,ops` on their GEMM
#     kernel: duration and inst_mix.
# Usage: derived-check.sh [tma] [cp] [cutlass_49] [cutlass_54]   (default: all four)
# Each query's text report goes to $OUT/<name>.txt, its JSON to $OUT/<name>.json; the summary
# (exit codes and times) to $OUT/derived-summary.txt. Builds argus and the injection libraries.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
cd "$gpu_root"
summary="$out/derived-summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
start=$(date +%s)
gpu_build derived-build.log argus argus_inject argus_cupti_sass
say "built argus in $(($(date +%s) - start)) s"
fail=0

# query NAME ARGS...: one query, text then JSON (the JSON run reuses the workspace's results).
query() {
  local name="$1"
  shift
  local ws="/tmp/argus-ws-$name"
  rm -rf "$ws"
  local t0
  t0=$(date +%s%N)
  timeout 540 "$B/argus" query "$@" --workspace "$ws" --require-gpu >"$out/$name.txt" 2>&1
  local rc=$?
  say "$name: exit $rc in $((($(date +%s%N) - t0) / 1000000)) ms"
  grep -vE '^\[' "$out/$name.txt" | head -60 | tee -a "$summary"
  timeout 120 "$B/argus" query "$@" --workspace "$ws" --json >"$out/$name.json" 2>"$out/$name.err"
  [ $rc -eq 0 ] || fail=1
}

# The CUTLASS sources: the nvidia-cutlass wheel carried in .whl/ (no package registry there).
cutlass_sources() {
  [ -d .venv/cutlass/include ] && return 0
  local wheel
  wheel=$(ls .whl/nvidia_cutlass-*.whl 2>/dev/null | head -1)
  [ -n "$wheel" ] || return 1
  python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall('/tmp/cutlass-wheel')" \
    "$wheel" && mkdir -p .venv && ln -sfn /tmp/cutlass-wheel/cutlass_library/source .venv/cutlass
}

for what in "${@:-tma cp cutlass_49 cutlass_54}"; do
  for w in $what; do
    case "$w" in
      tma) query tma_gemm_ops --program examples/tma_gemm/argus.yaml --derive ops \
             --region mainloop --signals duration,inst_mix ;;
      cp) query cp_async_ops --program examples/cp_async_pipeline/argus.yaml --derive ops \
            --region mainloop --signals duration ;;
      cutlass_49 | cutlass_54)
        spec=$(ls examples/cutlass_hopper/*_${w#cutlass_}/argus.yaml)
        if ! cutlass_sources; then
          say "$w: skipped, no CUTLASS sources (.venv/cutlass from scripts/setup.sh, or the wheel in .whl/)"
          continue
        fi
        # The spec's first kernel: the GEMM (the example also launches reference kernels).
        kernel=$(grep -m1 -E '^  - name: ' "$spec" | sed -E 's/^  - name: //; s/ .*//')
        query "$w" --program "$spec" --kernel "$kernel" --derive loops,ops \
          --signals duration,inst_mix ;;
      *) say "unknown check $w (tma cp cutlass_49 cutlass_54)"; fail=1 ;;
    esac
  done
done
say "derived-check: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail

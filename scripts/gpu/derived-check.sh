#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): queries on regions derived without editing the source
# (argus/ptx/derive.h, docs/regions-file.md).
#  tma         examples/tma_gemm with `--derive ops`: the marked mainloop split into its derived
#              mbarrier_wait / wgmma parts: duration, inst_mix and op_latency;
#  cp          examples/cp_async_pipeline with `--derive ops`: its mainloop split by cp.async runs
#              and barriers: duration;
#  cutlass_49, cutlass_54  the CUTLASS programs of examples/cutlass_hopper/ (unmodified package
#              sources; the wheel carried in .whl/ when .venv/cutlass is not there) with
#              `--derive loops,ops` on their (first) GEMM kernel: duration and inst_mix, then
#              duration scoped to the producer warp group (warpgroup=0) and to the consumers
#              (warpgroup=1..2), from the same workspace;
#  cutlass_49_latency, cutlass_54_latency  op_latency on the same kernel: the producer K loop's
#              TMA loads in its iterations 0..3 (the derived regions' trip counters);
#  cutlass_49_paired, cutlass_54_paired  tracing's added time on the kernel, paired with its
#              trace-free build, result lines compared, SASS compared
#              (bench/trace_overhead/real_paired.sh); cutlass_N_paired_loops the same with
#              `--derive loops` only (a record per loop entry, none per op).
# Usage: derived-check.sh CHECK...   (default: tma cp cutlass_49 cutlass_54)
# Each query's text report goes to $OUT/<name>.txt, its JSON to $OUT/<name>.json; the summary
# (exit codes and times) to $OUT/derived-summary.txt. Builds argus and the injection libraries.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
cd "$gpu_root"
summary="$out/derived-summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>&1 | head -1)"
start=$(date +%s)
gpu_build derived-build.log argus argus_inject argus_cupti_sass
say "built argus in $(($(date +%s) - start)) s"
fail=0

# query NAME ARGS...: one query, text then JSON (the JSON run reuses the workspace's results).
query() {
  local name="$1"
  shift
  # WS=KEY: share the workspace of an earlier query (its builds and runs are reused).
  local ws="/tmp/argus-ws-${WS:-$name}"
  [ -n "${WS:-}" ] || rm -rf "$ws"
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
             --region mainloop --signals duration,inst_mix,op_latency ;;
      cp) query cp_async_ops --program examples/cp_async_pipeline/argus.yaml --derive ops \
            --region mainloop --signals duration ;;
      cutlass_49* | cutlass_54*)
        number=${w#cutlass_}
        number=${number%%_*}
        spec=$(ls examples/cutlass_hopper/*_${number}/argus.yaml)
        if ! cutlass_sources; then
          say "$w: skipped, no CUTLASS sources (.venv/cutlass from scripts/setup.sh, or the wheel in .whl/)"
          continue
        fi
        # The spec's first kernel: the GEMM (the example also launches reference kernels).
        kernel=$(grep -m1 -E '^  - name: ' "$spec" | sed -E 's/^  - name: //; s/ .*//')
        common=(--program "$spec" --kernel "$kernel" --derive loops,ops)
        case "$w" in
          *_latency)
            # The producer's K-loop TMA loads: the deepest derived tma_load region (the tile
            # loop's K loop; the epilogue's loads sit one loop higher), iterations 0..3 of it
            # (each K loop's trips count from 0 for every tile: docs/regions-file.md).
            "$B/argus" regions "$spec" --derive loops,ops --json >"$out/$w-regions.json" 2>&1
            region=$(python3 -c 'import json, sys
ks = [k for k in json.load(open(sys.argv[1]))["kernels"] if k["name"] == sys.argv[2]]
paths = [r["path"] for k in ks for r in k["regions"] if r["path"].endswith("/tma_load")]
print(max(paths, key=lambda p: p.count("/")) if paths else "")' "$out/$w-regions.json" "$kernel")
            say "$w: region $region"
            query "$w" "${common[@]}" ${region:+--region "$region"} --scope iter=0..3 \
              --signals duration,op_latency ;;
          *_paired | *_paired_loops)
            # The spec's own arguments, more timed iterations where the example takes them.
            args=$(grep -m1 -E '^  command:' "$spec" | sed -E 's/.*"\{exe\}", //; s/\].*//; s/"//g; s/,//g')
            [ "$number" = 54 ] && args="${args/--iterations=10/--iterations=200}"
            t0=$(date +%s)
            # shellcheck disable=SC2086
            derive=loops,ops
            [ "${w##*_}" = loops ] && derive=loops
            ROUNDS=${ROUNDS:-10} bash bench/trace_overhead/real_paired.sh "$B/argus" "$out/$w" \
              "$spec" "$kernel" "$derive" -- $args >"$out/$w.txt" 2>&1
            rc=$?
            say "$w: exit $rc in $(($(date +%s) - t0)) s"
            tail -40 "$out/$w.txt" | tee -a "$summary"
            rm -rf "$out/$w/runs" "$out/$w"/*/triton
            [ $rc -eq 0 ] || fail=1 ;;
          *)
            query "$w" "${common[@]}" --signals duration,inst_mix
            WS="$w" query "$w-producer" "${common[@]}" --signals duration --scope warpgroup=0
            WS="$w" query "$w-consumers" "${common[@]}" --signals duration --scope warpgroup=1..2 ;;
        esac ;;
      *) say "unknown check $w (tma cp cutlass_49 cutlass_54 cutlass_N_latency cutlass_N_paired[_loops])"
         fail=1 ;;
    esac
  done
done
say "derived-check: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail

#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs and .whl): Argus on unmodified Triton kernels of PyPI
# packages (examples/triton_packages/), with regions derived from the PTX Triton compiles.
# For each package kernel:
#  NAME-regions.json  `argus regions SPEC --derive loops,ops --json`: the script runs once to dump
#                     the kernel's PTX, and the derived tree comes back;
#  NAME.txt/.json     `argus query (the JSON is the report the workspace kept) --derive loops,ops --signals duration,inst_mix` (on every region);
#  NAME-latency.*     where the kernel has async ops (cp.async, TMA, WGMMA): op_latency on the
#                     first async-op region of its deepest derived loop (TMA loads, else cp.async,
#                     else WGMMA), iterations 0..1 of the loop's trip counter (every op of a
#                     whole loop, as a flash-attention KV loop has, makes some 70 probe runs);
#  NAME-paired/       tracing's added time, the traced build's launches paired with the trace-free
#                     build's (bench/trace_overhead/real_paired.sh, ROUNDS rounds of --reps REPS
#                     launches), the two runs' result lines (with each script's output digest)
#                     compared, and the SASS of the two builds compared outside the recording
#                     instructions.
# Usage: triton-packages-check.sh [NAME...]   (default: every folder of examples/triton_packages)
# Environment: STEPS (of query latency paired; default all), ROUNDS (paired rounds, default 10),
# REPS (launches per run, default 20), DEADLINE
# (seconds after the start past which the remaining steps are skipped and said so; default none).
# The packages come from the wheels in .whl/ (liger-kernel, geak-eval, packaging), installed with
# --no-deps into /tmp/argus-pkgs (no package registry there) when python3 cannot import them.
# Writes under $OUT: triton-packages-summary.txt and the files above.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
cd "$gpu_root"
summary="$out/triton-packages-summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>&1 | head -1)"
start=$(date +%s)
start0=$start
gpu_build triton-packages-build.log argus argus_inject
say "built argus in $(($(date +%s) - start)) s"

if ! python3 -c 'import liger_kernel, geak_eval' 2>/dev/null; then
  wheels=(.whl/liger_kernel-*.whl .whl/geak_eval-*.whl)
  python3 -c 'import packaging' 2>/dev/null || wheels+=(.whl/packaging-*.whl)
  python3 -m pip install --quiet --no-deps --no-index --target /tmp/argus-pkgs "${wheels[@]}" \
    >"$out/pip.log" 2>&1 || { say "cannot install ${wheels[*]}: $(tail -3 "$out/pip.log")"; exit 1; }
  export PYTHONPATH="/tmp/argus-pkgs${PYTHONPATH:+:$PYTHONPATH}"
fi
say "$(python3 -c 'import importlib.metadata as m, torch, triton
print(", ".join(f"{d} {m.version(d)}" for d in ("liger-kernel", "geak-eval")),
      f"triton {triton.__version__} torch {torch.__version__}")' 2>&1)"
fail=0

# The first async-op region (tma_load, cp_async, wgmma) of KERNEL's deepest derived loop in a
# regions JSON, else that loop, else nothing.
latency_region() {
  python3 -c 'import json, sys
ks = [k for k in json.load(open(sys.argv[1]))["kernels"] if k["name"] == sys.argv[2]]
paths = [r["path"] for k in ks for r in k["regions"]]
loops = [p for p in paths if p.split("/")[-1].startswith("loop")]
loop = max(loops, key=lambda p: p.count("/")) if loops else ""
ops = [f"{loop}/{op}" for op in ("tma_load", "cp_async", "wgmma") if f"{loop}/{op}" in paths]
print(ops[0] if ops else loop)' "$1" "$2" 2>/dev/null
}

# step NAME: whether STEPS includes it.
step() { [[ " ${STEPS:-query latency paired} " == *" $1 "* ]]; }

# late STEP: true (and says so) once DEADLINE has passed.
late() {
  [ -n "${DEADLINE:-}" ] && [ $(($(date +%s) - start0)) -ge "$DEADLINE" ] || return 1
  say "$1: skipped, past DEADLINE=$DEADLINE s"
}

# run NAME ARGS...: one argus command (a query unless ARGS start otherwise), its output in NAME.txt.
run() {
  local name="$1"
  shift
  local t0
  t0=$(date +%s%N)
  timeout 540 "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  say "$name: exit $rc in $((($(date +%s%N) - t0) / 1000000)) ms"
  grep -vE '^\[' "$out/$name.txt" | head -50 | tee -a "$summary"
  return $rc
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=($(ls examples/triton_packages/ | grep -v README))
for name in "${names[@]}"; do
  spec="examples/triton_packages/$name/argus.yaml"
  [ -f "$spec" ] || { say "$name: no $spec"; fail=1; continue; }
  kernel=$(grep -m1 -E '^  - name: ' "$spec" | sed -E 's/^  - name: //; s/ .*//')
  ws="/tmp/argus-ws-$name"
  rm -rf "$ws"
  common=(--program "$spec" --kernel "$kernel" --derive loops,ops --workspace "$ws")
  "$B/argus" regions "$spec" --kernel "$kernel" --derive loops,ops --json \
    >"$out/$name-regions.json" 2>"$out/$name-regions.err"
  say "$name: regions exit $? ($(python3 -c 'import json, sys
print(len([r for k in json.load(open(sys.argv[1]))["kernels"] for r in k["regions"]]), "regions")' \
    "$out/$name-regions.json" 2>&1 | tail -1))"
  late "$name" && continue
  if step query; then
    run "$name" "$B/argus" query "${common[@]}" --signals duration,inst_mix --require-gpu || fail=1
    "$B/argus" report last --workspace "$ws" --json >"$out/$name.json" 2>/dev/null
  fi
  if step latency && ! late "$name-latency" &&
    grep -qE '"(cp_async|tma_load|wgmma)"|/(cp_async|tma_load|wgmma)"' "$out/$name-regions.json"; then
    region=$(latency_region "$out/$name-regions.json" "$kernel")
    run "$name-latency" "$B/argus" query "${common[@]}" ${region:+--region "$region"} \
      --scope iter=0..1 --signals duration,op_latency --require-gpu || fail=1
    "$B/argus" report last --workspace "$ws" --json >"$out/$name-latency.json" 2>/dev/null
  fi
  step paired || continue
  late "$name-paired" && continue
  t0=$(date +%s)
  ROUNDS=${ROUNDS:-10} bash bench/trace_overhead/real_paired.sh "$B/argus" "$out/$name-paired" \
    "$spec" "$kernel" loops,ops -- --reps "${REPS:-20}" >"$out/$name-paired.txt" 2>&1
  rc=$?
  say "$name-paired: exit $rc in $(($(date +%s) - t0)) s"
  tail -30 "$out/$name-paired.txt" | tee -a "$summary"
  rm -rf "$out/$name-paired/runs" "$out/$name-paired"/*/triton "$out/$name-paired"/*/triton-cache
  [ $rc -eq 0 ] || fail=1
done
say "triton-packages-check: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail

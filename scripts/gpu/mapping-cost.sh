#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): where issue 6's mapping collection spends its added time.
# bench/pc_overhead (128 CTAs x 256 threads, 5 launches) native and under libargus_cupti_sass.so
# with the mapping run's one metric, SASS metrics enabled at the first launch (the default) and at
# context creation (ARGUS_SASS_ENABLE_AT=context), CUPTI's profiler initialised at the first
# configuration (ARGUS_CUPTI_INIT=inline) or on its own thread from injection (early, the
# default), three runs each; prints the per-launch host
# times, the process wall time and the collector's set-up phases (setup.jsonl: CUPTI profiler
# initialisation, metric listing, SetConfig, Enable, the profiled launch's enter-to-exit, the
# synchronisation and flush after it), medians over the runs. Under three minutes.
set -uo pipefail
source scripts/gpu/pc-bench-setup.sh /tmp/mapping-cost
run() {  # name env...: launch lines and the process wall time into $work/<name>.log
  local name=$1 t0
  shift
  t0=$(date +%s%N)
  env "$@" timeout 60 "$exe" 5 >"$work/$name.log" 2>&1
  local rc=$?
  echo "{\"process_ms\": $((($(date +%s%N) - t0) / 1000000)), \"exit\": $rc}" >>"$work/$name.log"
}
for rep in 1 2 3; do
  run "native_$rep"
  for at in launch context; do
    for init in inline early; do
      run "${at}-${init}_$rep" CUDA_INJECTION64_PATH="$lib" \
        ARGUS_OUT_DIR="$work/out_${at}-${init}_$rep" ARGUS_SASS_METRICS=smsp__sass_inst_executed \
        ARGUS_PC_KERNELS=pc_overhead ARGUS_SASS_ENABLE_AT=$at ARGUS_CUPTI_INIT=$init
    done
  done
  # The other per-PC families with the defaults: the cupti_sass executor's five metrics, and PC
  # sampling (which needs no profiler initialisation).
  run "sass5_$rep" CUDA_INJECTION64_PATH="$lib" ARGUS_OUT_DIR="$work/out_sass5_$rep" \
    ARGUS_SASS_METRICS=smsp__sass_inst_executed,smsp__sass_thread_inst_executed,smsp__sass_thread_inst_executed_pred_on,smsp__sass_inst_executed_op_global,smsp__sass_inst_executed_op_shared \
    ARGUS_PC_KERNELS=pc_overhead
  run "sampling_$rep" CUDA_INJECTION64_PATH="$lib" ARGUS_OUT_DIR="$work/out_sampling_$rep" \
    ARGUS_PC_SAMPLING=1 ARGUS_PC_KERNELS=pc_overhead
done
python3 - "$work" <<'PY' | tee "$out/mapping-cost.txt"
import collections, glob, json, statistics, sys
d = sys.argv[1]
med = lambda xs: statistics.median(xs) if xs else float("nan")
def launches(name):
    first, later, proc, setup, outside, gpu = [], [], [], [], [], []
    for f in sorted(glob.glob(f"{d}/{name}_*.log")):
        main_ms = None
        for line in open(f):
            if not line.startswith("{"): continue
            j = json.loads(line)
            if "process_ms" in j:
                proc.append(j["process_ms"])
                if main_ms is not None: outside.append(j["process_ms"] - main_ms)
            elif "setup_ms" in j:
                setup.append(j["setup_ms"]); main_ms = j["main_ms"]
            else:
                (first if j["launch"] == 0 else later).append(j["wall_us"])
                gpu.append(j["event_us"])
    return med(first), med(later), med(proc), med(setup), med(outside), med(gpu)
n = launches("native")
print(f"native: first launch {n[0]:.1f} us, later {n[1]:.1f} us (GPU {n[5]:.2f} us), process "
      f"{n[2]:.0f} ms (CUDA set-up in main {n[3]:.0f} ms, before and after main {n[4]:.0f} ms)")
for at in ("launch-inline", "launch-early", "context-inline", "context-early", "sass5",
           "sampling"):
    f, l, p, s, o, _ = launches(at)
    print(f"{at}: first launch {f / 1e3:.2f} ms (+{(f - n[0]) / 1e3:.2f}), later "
          f"{l / 1e3:.3f} ms (+{(l - n[1]) / 1e3:.3f}), process {p:.0f} ms (+{p - n[2]:.0f}; "
          f"CUDA set-up in main +{s - n[3]:.0f}, before and after main +{o - n[4]:.0f})")
    phases = collections.defaultdict(list)
    for f in sorted(glob.glob(f"{d}/out_{at}_*/setup.jsonl")):
        seen = collections.Counter()
        for line in open(f):
            j = json.loads(line)
            key = j["phase"] + (" (first)" if seen[j["phase"]] == 0 else " (later, each)")
            seen[j["phase"]] += 1
            phases[key].append(j["ms"])
    for k, v in phases.items():
        print(f"    {k}: {med(v):.2f} ms (median of {len(v)})")
PY

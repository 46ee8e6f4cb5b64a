#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): issue 6's evidence that attributed per-PC signals work.
#   (a) exactness: argus query on examples/shared_callee; per-region executed warp instructions
#       must equal the warp-replay ground truth x warps, and the total CUPTI's and ncu's kernel
#       totals (the gpu-labelled test attribution_shared_callee_gpu, run here directly);
#   (b) Argus's per-PC counts (CUPTI SASS metrics) == ncu's source counters per PC, same cubin;
#   (c) a Case 1 / Case 2 report on examples/warp_specialized: instruction share per region vs per
#       source file (hopper.cuh helpers are force-inlined), barrier instructions per region;
#   (d) the overhead of each per-PC collector over the native run (scripts/gpu/mapping-cost.sh on
#       bench/pc_overhead: the seed's 128 CTAs x 256 threads, 8 occurrences, 2,048 dependent FMAs
#       per thread).
# Clocks and device settings are never changed. Writes under $OUT (default /tmp/argus-out):
# pc_summary.txt, shared_callee_query.txt, case_warp_specialized.txt, gpu_test.log,
# pc_fixtures.tgz (the query's PC bundles, bench logs).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-/tmp/argus-out}"
mkdir -p "$out"
work=/tmp/argus-pc-check
rm -rf "$work"
mkdir -p "$work/logs" "$work/fixtures"
summary="$out/pc_summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
finish() {
  tar czf "$out/pc_fixtures.tgz" -C "$work" fixtures logs 2>/dev/null
  exit "${1:-0}"
}
export PATH=/usr/local/cuda/bin:$PATH
cd "$root"

export LD_LIBRARY_PATH="/tmp/argus-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
targets=(argus argus_cupti_sass argus_attribution_gpu_test argus_bench_pc_overhead)
start=$(date +%s)
if ! build=$("$root"/scripts/gpu/device-build.sh "${targets[@]}" 2>"$work/logs/build.log"); then
  tail -40 "$work/logs/build.log" | tee -a "$summary"
  cp "$work/logs/build.log" "$out/build.log"
  finish 1
fi
say "== built ${targets[*]} in $(($(date +%s) - start)) s on $(nproc) cores"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader |
  tee -a "$summary"
argus="$build/argus"
status=0

say "== (a) shared_callee: argus query, all six per-PC signals (text report)"
start=$(date +%s)
timeout 150 "$argus" query --program examples/shared_callee/argus.yaml --kernel shared_callee \
  --signals inst_executed,inst_mix,barrier_inst,mem_inst,stall_reasons,ncu_source_counters \
  --workspace "$work/ws" >"$out/shared_callee_query.txt" 2>&1
say "query: exit $? in $(($(date +%s) - start)) s"
grep -vE '^argus: [0-9]+/' "$out/shared_callee_query.txt" | head -120 >>"$summary"

say "== (a) exactness test (attribution_shared_callee_gpu; reuses the workspace)"
ARGUS_PC_WORKSPACE="$work/ws" ARGUS_PC_FIXTURE_OUT="$work/fixtures" timeout 150 \
  "$build/src/synthesis/argus_attribution_gpu_test" >"$out/gpu_test.log" 2>&1
rc=$?
grep -E '^(region|total)|PASSED|FAILED|Failure|Expected|Which is|actual' "$out/gpu_test.log" |
  head -40 | tee -a "$summary"
say "exactness test: exit $rc"
[ $rc = 0 ] || status=1
ls -la "$work/fixtures" >>"$summary"

say "== (b) per-PC: CUPTI SASS metrics vs ncu source counters (same cubin)"
python3 - "$work/fixtures" <<'EOF' 2>&1 | tee -a "$summary"
import json, re, sys
d = sys.argv[1]
try:
    cupti = json.load(open(f"{d}/cupti_sass.bundle.json"))
    ncu = json.load(open(f"{d}/ncu.bundle.json"))
except OSError as e:
    print("missing bundle:", e); sys.exit(1)
kernel = cupti["kernel"]
# Body starts inside the kernel's text: `$kernel$callee:` labels before `/*0120*/` offsets.
starts, pending = {kernel: 0}, []
for line in cupti["disassembly"].splitlines():
    m = re.match(r"\s*\$([^:\s]+)\$([^:\s]+):", line)
    if m and m.group(1) == kernel: pending.append(m.group(2))
    o = re.search(r"/\*([0-9a-f]{4,})\*/", line)
    if o and pending:
        for p in pending: starts[p] = int(o.group(1), 16)
        pending = []
def per_pc(bundle, metric):
    out = {}
    for launch in bundle["launches"]:
        for f in launch["functions"]:
            base = starts.get(f["name"], 0) if f["name"] != kernel else 0
            for pc in f["pcs"]:
                v = pc["metrics"].get(metric, {}).get("total")
                if v is not None: out[base + pc["pc"]] = out.get(base + pc["pc"], 0) + v
    return out
a = per_pc(cupti, "smsp__sass_inst_executed")
b = per_pc(ncu, "Instructions Executed")
pcs = sorted(set(a) | set(b))
diff = [(p, a.get(p), b.get(p)) for p in pcs if a.get(p, 0) != b.get(p, 0)]
print(f"cubin {cupti['cubin']['hash'][:12]} (cupti: {cupti['cubin_check'].get('method')}), "
      f"ncu cubin {ncu['cubin']['hash'][:12]} (ncu: {ncu['cubin_check'].get('method')})")
print(f"PCs compared: {len(pcs)}; equal: {len(pcs) - len(diff)}; different: {len(diff)}")
print(f"sum CUPTI {sum(a.values())}, sum ncu {sum(b.values())}, ncu raw totals {ncu['totals']}")
for p, x, y in diff[:8]: print(f"  mismatch pc {p:#x}: cupti {x} ncu {y}")
sys.exit(0 if not diff and pcs else 1)
EOF
[ "${PIPESTATUS[0]}" = 0 ] || status=1

say "== (c) Case 1 / Case 2 on warp_specialized: share per region vs per file, barriers per region"
start=$(date +%s)
timeout 120 "$argus" query --program examples/warp_specialized/argus.yaml \
  --kernel warp_specialized_gemm --signals inst_executed,barrier_inst,inst_mix \
  --workspace "$work/ws_ws" >"$out/case_warp_specialized.txt" 2>&1
say "query: exit $? in $(($(date +%s) - start)) s"
grep -vE '^argus: [0-9]+/' "$out/case_warp_specialized.txt" | head -80 >>"$summary"

say "== (d) per-PC collector overhead (bench/pc_overhead, 5 launches per run): mapping-cost.sh"
OUT="$work/logs/mapping-cost" bash scripts/gpu/mapping-cost.sh 2>&1 | tee -a "$summary"
cp /tmp/mapping-cost/out_launch-early_1/pc-0.json "$work/fixtures/bench_mapping_pc-0.json" 2>/dev/null
say "== done: status $status"
finish "$status"

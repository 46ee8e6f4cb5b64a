#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): may `--concurrent-probes` default to more than 1? For each
# probe example (the three CUDA C++ async examples and the Triton TMA matmul), answers the same
# op_latency query one probe at a time, N at once, and one at a time again, each in a fresh
# workspace, and prints per probe its latency median in each run, then per example the largest
# difference of N at once from the first one-at-a-time run beside that of the second
# one-at-a-time run, and the time of each query. N is 8 for the CUDA C++ examples and 4 for the
# Triton one (its query has 4 probes of ~20 s each: a Python process, Triton's JIT inside the
# turn). An example passes when every query succeeded with every probe's output equal to the
# reference run's and N at once is within 15 % of one at a time, or within the two one-at-a-time
# runs' own difference. About 7 minutes; the reports are packed into $out/concurrency.tgz.
# Usage: OUT=dir concurrency-check.sh [EXAMPLE...]  (tma_gemm cp_async warp_specialized triton)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
cd "$gpu_root"
gpu_build concurrency-build.log argus argus_inject
w=/tmp/argus-concurrency
rm -rf "$w"; mkdir -p "$w"
status=0
check() {  # name at-once... -- query arguments
  local name="$1"; shift
  local runs=()
  while [ "$1" != -- ]; do runs+=("$1"); shift; done
  shift
  local i=0
  for at_once in "${runs[@]}"; do
    i=$((i + 1))
    local t0=$(date +%s.%N)
    timeout 600 "$B/argus" query --json --workspace "$w/ws-$name-$i" --concurrent-probes "$at_once" \
      "$@" --signals op_latency >"$w/$name-$i-x$at_once.json" 2>"$w/$name-$i.err"
    echo "$name: query $i ($at_once at once) exit $?, $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s"
  done
  python3 - "$w" "$name" <<'PY' || status=1
import glob, json, os, re, sys
w, name = sys.argv[1], sys.argv[2]
paths = sorted(glob.glob(os.path.join(w, f"{name}-*-x*.json")),
               key=lambda p: int(re.search(r"-(\d+)-x", p).group(1)))
runs, problems = [], []
for path in paths:
    at_once = int(re.search(r"-x(\d+)\.json", path).group(1))
    try:
        value = json.load(open(path))["signals"]["op_latency"]["value"]
    except Exception as e:
        problems.append(f"{os.path.basename(path)}: no report ({e})")
        continue
    ops = {(o["op"].split(":", 1)[1], o["iteration"]): o for o in value.get("ops", [])}
    problems += [f"{os.path.basename(path)}: {k}: output differs from the reference run's"
                 for k, o in ops.items() if not o["correctness"]["output_equal_to_reference"]]
    problems += [f"{os.path.basename(path)}: failed {json.dumps(f)[:200]}" for f in value.get("failed", [])]
    runs.append((at_once, {k: o["latency"]["median"] for k, o in ops.items()}))
ones = [r for a, r in runs if a == 1]
many = [(a, r) for a, r in runs if a > 1]
if len(ones) < 2 or not many:
    print(f"{name}: FAIL, missing runs; " + "; ".join(problems))
    sys.exit(1)
keys = sorted(ones[0])
print(f"| {name} probe | " + " | ".join(f"{a} at once" for a, _ in runs) + " |")
print("| --- " * (len(runs) + 1) + "|")
for k in keys:
    print(f"| {k[0]} it {k[1]} | " + " | ".join(f"{r.get(k, float('nan')):.0f}" for _, r in runs) + " |")
def largest(a, b):
    return max((abs(a[k] - b[k]) / b[k] for k in b if k in a and b[k] > 0), default=float("nan"))
spread = largest(ones[1], ones[0])
worst = max(largest(r, ones[0]) for _, r in many)
missing = [k for _, r in many for k in keys if k not in r]
ok = not problems and not missing and worst <= max(0.15, spread)
print(f"{name}: {'PASS' if ok else 'FAIL'}: {many[0][0]} at once vs one at a time {100 * worst:.1f} %, "
      f"one at a time again {100 * spread:.1f} %" + ("; " + "; ".join(problems) if problems else "") +
      (f"; not joined at once: {missing}" if missing else ""))
sys.exit(0 if ok else 1)
PY
}
examples="${*:-tma_gemm cp_async warp_specialized triton}"
for example in $examples; do
  case "$example" in
    tma_gemm) check tma_gemm 1 8 1 -- --program examples/tma_gemm/argus.yaml --kernel tma_gemm \
      --region mainloop/tma_load --scope iter=0..3 ;;
    cp_async) check cp_async 1 8 1 -- --program examples/cp_async_pipeline/argus.yaml \
      --kernel cp_async_gemv --region mainloop/load --scope iter=0..3 ;;
    warp_specialized) check warp_specialized 1 8 1 -- --program examples/warp_specialized/argus.yaml \
      --kernel warp_specialized_gemm --region producer/mainloop/tma_load --scope iter=0..3 ;;
    triton)
      tma=$("$B/argus" ptx discover tests/data/ptx/triton_matmul_tma_argus.ptx --region mainloop --json |
        python3 -c "import json, sys; print(','.join(s['op_id'] for s in json.load(sys.stdin) if s['kind'] == 'tma_load'))")
      check triton 1 4 1 -- --program examples/triton_matmul/argus.yaml --kernel matmul_tma_argus \
        --region mainloop --scope "iter=0|3" --ops "$tma" ;;
    *) echo "unknown example $example (tma_gemm cp_async warp_specialized triton)"; status=2 ;;
  esac
done
(cd "$w" && tar czf "$out/concurrency.tgz" ./*.json ./*.err 2>/dev/null)
exit $status

#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): can CUPTI SASS metrics give per-SM values on this GPU?
# bench/pc_overhead (128 CTAs x 256 threads) under libargus_cupti_sass.so with
# smsp__sass_inst_executed at each ARGUS_SASS_GRANULARITY (gpu, sm, smsp) and each flush mode
# (deferred, launch); prints, per run, the kernel's total over PCs, the instances per value, how
# many instances counted anything, and whether the per-instance values sum to the totals. The
# fourth session saw all-zero values at `sm` with both flushes; `smsp` was not tried. One minute.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/gpu/pc-bench-setup.sh" /tmp/sass-granularity
for g in gpu sm smsp; do
  for flush in deferred launch; do
    d="$work/$g-$flush"
    CUDA_INJECTION64_PATH="$lib" ARGUS_OUT_DIR="$d" ARGUS_SASS_METRICS=smsp__sass_inst_executed \
      ARGUS_PC_KERNELS=pc_overhead ARGUS_SASS_GRANULARITY=$g ARGUS_SASS_FLUSH=$flush \
      timeout 60 "$exe" 2 >"$d.log" 2>&1
    echo "exit $?" >>"$d.log"
  done
done
python3 - "$work" <<'PY' | tee "$out/sass-granularity.txt"
import glob, json, os, sys
for d in sorted(glob.glob(f"{sys.argv[1]}/*-*")):
    if not os.path.isdir(d): continue
    for f in sorted(glob.glob(f"{d}/pc-*.json")):
        e = json.load(open(f))
        total, per = 0, None
        for fn in e["functions"]:
            for pc in fn["pcs"]:
                m = pc["metrics"].get("smsp__sass_inst_executed", {})
                total += m.get("total", 0)
                if "per_instance" in m:
                    per = [a + b for a, b in zip(per, m["per_instance"])] if per else list(m["per_instance"])
        counting = sum(1 for v in per if v) if per else (1 if total else 0)
        sums = "n/a" if per is None else ("yes" if sum(per) == total else f"no ({sum(per)})")
        print(f"{os.path.basename(d):<16} {os.path.basename(f):<10} total {total:>9}  instances "
              f"{e['instances']:>4}  counting {counting:>4}  per-instance sums to total: {sums}"
              + (f"  note: {e['note']}" if e.get("note") else ""))
    errs = open(f"{d}/errors.txt").read().strip() if os.path.exists(f"{d}/errors.txt") else ""
    if errs: print(f"{os.path.basename(d):<16} errors: {errs[:300]}")
PY

#!/usr/bin/env python3
"""GPU test of painted-PC signals on a Triton kernel (issue 8): `inst_executed` and `inst_mix`
of the Triton TMA matmul's `mainloop`, per region. The painted variants' builds assemble their
PTX with ptxas and override Triton's cubin with it (src/backends/compile/compile.cpp), so the
cubin that runs is the one the PC map is read from; the collectors check that it is. Checks:
both signals succeeded and are `attributed` and exact; the attributed regions and the source
files each add up to CUPTI's kernel total; `mainloop/iteration` executed instructions. Exits 77
(skip) without a GPU or without torch/triton. Usage: triton_painted_test.py ARGUS SRC
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpu_checks import argus_query, check, failures, require_gpu, require_torch_triton  # noqa: E402,E501

argus, source = sys.argv[1], sys.argv[2]
require_gpu()
require_torch_triton()

with tempfile.TemporaryDirectory() as ws:
    report = argus_query(argus, ws, "--program", f"{source}/examples/triton_matmul/argus.yaml",
                         "--kernel", "matmul_tma_argus", "--region", "mainloop",
                         "--signals", "inst_executed,inst_mix", timeout=900)
    for name in ("inst_executed", "inst_mix"):
        entry = report["signals"][name]
        check(entry.get("status") == "succeeded",
              f"{name}: succeeded ({entry.get('status')}: {entry.get('error') or entry.get('reason')})")
        check(entry.get("qualification") == "attributed", f"{name}: attributed")
    doc = report["signals"]["inst_executed"].get("value") or {}
    total = (doc.get("total") or {}).get("value")
    kernel_total = (doc.get("evidence") or {}).get("kernel_total_inst_executed")
    print("inst_executed per region:",
          json.dumps({r: v.get("value") for r, v in (doc.get("regions") or {}).items()}))
    print("total", total, "CUPTI kernel total", kernel_total)
    check(doc.get("exact") is True, f"inst_executed exact ({doc.get('estimate_reasons')})")
    check(total is not None and total == kernel_total,
          f"attributed total {total} equals CUPTI's kernel total {kernel_total}")
    regions = sum(v["value"] for v in (doc.get("regions") or {}).values())
    files = sum(v["value"] for v in (doc.get("source_files") or {}).values())
    check(total and abs(regions - total) <= 1e-9 * total, f"regions add up ({regions} vs {total})")
    check(total and abs(files - total) <= 1e-9 * total, f"source files add up ({files} vs {total})")
    iteration = ((doc.get("regions") or {}).get("mainloop/iteration") or {}).get("value", 0)
    check(iteration > 0, f"mainloop/iteration executed instructions ({iteration})")
    evidence = doc.get("evidence") or {}
    print("cubin check", json.dumps(evidence.get("cubin_check"))[:300],
          "sass check", json.dumps(evidence.get("sass_check"))[:300])

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all Triton painted-PC checks passed")

#!/usr/bin/env python3
"""GPU test of op_latency on the Triton TMA matmul (examples/triton_matmul: 64 CTAs x 4 warps,
8 K steps, 3 stages). Triton's pipeliner issues the loop's two TMA loads after the
`mainloop/iteration` region ends; the probe is made by the thread that armed the phase (thread 0
of the CTA) and takes the loop trip's iteration (src/passes/forced_wait.cpp). Checks, for the
last load of the phase in iterations 0 and 3: the probe program passed its own check with
output equal to the reference run's, the latency is positive and below 1 ms, one (CTA, warp 0)
pair per CTA joined, it is `derived`, and no slack is claimed (the wait is outside the region).
Exits 77 (skip) without a GPU or without torch/triton. Usage: triton_probe_test.py ARGUS SRC
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpu_checks import argus_query, check, failures, require_gpu, require_torch_triton  # noqa: E402,E501

argus, source = sys.argv[1], sys.argv[2]
require_gpu()
require_torch_triton()

# Only the TMA loads are probed (each Triton probe process takes about 20 s): their op IDs, stable
# across compiles of the same kernel, come from the fixture Triton 3.6 made of this kernel.
sites = json.loads(subprocess.run(
    [argus, "ptx", "discover", f"{source}/tests/data/ptx/triton_matmul_tma_argus.ptx",
     "--region", "mainloop", "--json"], capture_output=True, text=True, check=True).stdout)
tma = [s["op_id"] for s in sites if s["kind"] == "tma_load"]

with tempfile.TemporaryDirectory() as ws:
    report = argus_query(argus, ws, "--program", f"{source}/examples/triton_matmul/argus.yaml",
                         "--kernel", "matmul_tma_argus", "--region", "mainloop",
                         "--signals", "op_latency", "--scope", "iter=0|3", "--ops", ",".join(tma),
                         timeout=1200)
    entry = report["signals"]["op_latency"]
    check(entry.get("status") == "succeeded", f"op_latency status {entry.get('status')}")
    value = entry.get("value") or {}
    loads = [op for op in value.get("ops", []) if op.get("kind") == "tma_load"]
    check(len(loads) == 4, f"the loop's two TMA loads probed in iterations 0 and 3 (got {len(loads)}; "
          f"not probed: {json.dumps(value.get('not_probed'))[:600]})")
    for op in loads:
        name = f"{op['op']}@{op['iteration']}"
        check(op["qualification"] == "derived", f"{name}: derived")
        check(0 < op["latency"]["median"] < 1e6, f"{name}: latency in (0, 1 ms) "
              f"({op['latency']['median']} {op['unit']})")
        check(op["joined"] == 64 and op["unmatched"] == 0,
              f"{name}: one pair per CTA joined (joined {op['joined']}, unmatched {op['unmatched']})")
        check(op["correctness"]["output_equal_to_reference"],
              f"{name}: output equal to the reference run's")
        check(op.get("slack") is None and "slack_note" in op, f"{name}: no slack claimed")
    for op in value.get("failed", []):
        check(False, f"probe failed: {json.dumps(op)[:400]}")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all Triton probe checks passed")

#!/usr/bin/env python3
"""GPU test of op_latency on the TMA GEMM (256x256x512: 8 CTAs, 8 K-tiles, producer warp 4).

Probes the two TMA loads of mainloop/tma_load in iterations 0 and 7 (4 probes) and checks
facts independent of the tracer: every probe's program passed its own check with output equal
to the reference run's, latency > 0, each probe joined exactly the 8 (CTA, producer warp) pairs
of one launch with no unmatched occurrence, the shared expect_tx phase is labelled, and every
number is `derived` with the probe's variant/collect tasks as provenance, and every probe ran
with one hardware work queue with its kernels on one stream, and every probe process emptied the
L2 once it had the GPU's turn (turn_l2_ready in its timeline; Argus's own L2 reader kernel is not
among the program's kernels, or the kernels would be on two streams).
Exits 77 (skip) when there is no GPU. Usage: probe_test.py ARGUS SOURCE_DIR
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpu_checks import argus_query, check, failures, require_gpu  # noqa: E402

argus, source = sys.argv[1], sys.argv[2]
require_gpu()


with tempfile.TemporaryDirectory() as ws:
    report = argus_query(argus, ws, "--program", f"{source}/examples/tma_gemm/argus.yaml",
                         "--kernel", "tma_gemm", "--region", "mainloop/tma_load",
                         "--signals", "op_latency", "--scope", "iter=0|7")
    entry = report["signals"]["op_latency"]
    check(entry.get("status") == "succeeded", f"op_latency status {entry.get('status')}")
    value = entry.get("value", {})
    ops = value.get("ops", [])
    check(len(ops) == 4, f"4 probes joined (got {len(ops)}; failed {value.get('failed')})")
    check(not value.get("failed") and not value.get("not_probed"), "nothing failed or unprobed")
    for op in ops:
        name = f"{op['op']}@{op['iteration']}"
        check(op["qualification"] == "derived", f"{name}: derived")
        check(op["latency"]["median"] > 0 and op["latency"]["min"] > 0, f"{name}: latency > 0 ({op['latency']['median']} {op['unit']})")
        check(op["latency"]["count"] == 8 and op["joined"] == 8 and op["unmatched"] == 0,
              f"{name}: 8 (CTA, producer warp) pairs joined (count {op['latency']['count']}, joined {op['joined']}, unmatched {op['unmatched']})")
        check(op["launches"] == 1, f"{name}: one traced launch")
        check(op["correctness"]["output_equal_to_reference"], f"{name}: output equal to the reference run's")
        check(op["provenance"]["collect_task"].startswith("collect/probe["), f"{name}: provenance names its collection")
        check(("shared_phase" in op) == op["op"].endswith(":0"), f"{name}: shared phase labelled on the first load only")
        check(op["latency"]["median"] < 1e6, f"{name}: latency below 1 ms")
        # Probe processes run with one hardware work queue (backends/run.cpp); the GEMM launches
        # all its kernels on one stream (CUPTI's stream ids), so no caution.
        check(op.get("gpu_turn_l2") == "empty", f"{name}: ran with the L2 emptied (gpu_turn_l2 {op.get('gpu_turn_l2')})")
        check(op.get("work_queues") == 1 and op.get("kernel_streams") == 1 and "caution" not in op,
              f"{name}: one work queue, kernels on one stream, no caution (work_queues {op.get('work_queues')}, kernel_streams {op.get('kernel_streams')})")
    # Every probe process emptied the L2 before its program's GPU work (ARGUS_GPU_TURN_L2's
    # default, libargus_inject.so).
    neighbours = value.get("isolation", {}).get("neighbours", [])
    check(len(neighbours) == 4, f"4 probe processes in the isolation check (got {len(neighbours)})")
    for n in neighbours:
        events = [event for event, _ in n.get("timeline", [])]
        check("turn_l2_ready" in events and "turn_l2_failed" not in events,
              f"{n.get('collect')}: the L2 emptied once the turn was taken (timeline {events})")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all probe checks passed")

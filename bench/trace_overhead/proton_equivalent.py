#!/usr/bin/env python3
"""The seed's reference-tracing microbenchmark as a Triton kernel, traced with Proton scopes.

Same shape as seed_kernel.cu: 128 programs x 8 warps (one element per thread, 256 threads), 64
sequential occurrences of one region per thread, each doing ``inner`` iterations of 8 dependent
FP32 FMAs (compute) or a dependent indexed load + 2 FMAs (memory). Proton's intra-kernel scopes
(``pl.enter_scope``/``pl.exit_scope``, Triton semantic) wrap each occurrence. The 64 occurrences are
unrolled with ``tl.static_range`` (Proton's tutorials warn against scope ops inside ``scf.for``
loops), so each occurrence is straight-line code around a runtime inner loop.

Three configurations per (kernel, inner):
  baseline      SCOPES=False, Proton not started
  inactive      SCOPES=True, Proton not started (the scopes should compile to nothing)
  proton        SCOPES=True, under proton.start(backend="instrumentation")
Two ways to time them:
  default       median of triton.testing.do_bench. With Proton active this includes Proton's
                per-launch host work (its instrumentation profiler synchronizes the stream and parses
                the profile buffer inside the launch call), i.e. what a Proton user waits for.
  --inject LIB  kernel-only GPU durations: the script re-runs itself under CUDA_INJECTION64_PATH=LIB
                (libargus_inject.so; Triton kernels have no __argus_trace, so it only records CUPTI
                kernel activity into kernels.jsonl), launches each configuration 1 + warm-up +
                --launches times with a synchronization after each, and takes the median of the
                CUPTI durations of the timed launches. Comparable with run.sh's numbers for Argus.
Prints one JSON line per configuration, then a table.

Usage: proton_equivalent.py [--kernel compute|memory|both] [--inner 8,16,...] [--mode default|clock32]
                            [--out DIR] [--inject LIB [--launches N --warmup N]] [--check]
``--check`` only imports Triton and Proton and builds the kernels' Python objects (no GPU).
"""

import argparse
import json
import os
import sys

CTAS = 128
THREADS = 256
NUM_WARPS = THREADS // 32
OCCURRENCES = 64
TABLE = 4096  # must match kSeedTableSize's default in harness.cu (16 KiB, L1-resident)


def build_kernels():
    import triton
    import triton.language as tl
    import triton.profiler.language as pl

    pl.enable_semantic("triton")  # Proton scopes are Gluon-only by default

    @triton.jit
    def seed_compute_tt(out_ptr, inner, a, b, BLOCK: tl.constexpr, OCC: tl.constexpr,
                        SCOPES: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        acc = 1.0 + 1e-3 * (tl.arange(0, BLOCK) % 256).to(tl.float32)
        for occ in tl.static_range(OCC):
            if SCOPES:
                pl.enter_scope("occurrence")
            for i in range(inner):
                acc = acc * a + b
                acc = acc * a + b
                acc = acc * a + b
                acc = acc * a + b
                acc = acc * a + b
                acc = acc * a + b
                acc = acc * a + b
                acc = acc * a + b
            if SCOPES:
                pl.exit_scope("occurrence")
        tl.store(out_ptr + offs, acc)

    @triton.jit
    def seed_memory_tt(out_ptr, next_ptr, values_ptr, inner, BLOCK: tl.constexpr,
                       OCC: tl.constexpr, TABLE_MASK: tl.constexpr, SCOPES: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        j = (offs * 977) & TABLE_MASK
        acc = tl.zeros((BLOCK, ), dtype=tl.float32)
        for occ in tl.static_range(OCC):
            if SCOPES:
                pl.enter_scope("occurrence")
            for i in range(inner):
                j = tl.load(next_ptr + j)
                v = tl.load(values_ptr + j)
                acc = acc * 0.999 + v
                acc = acc * 0.999 + 0.5
            if SCOPES:
                pl.exit_scope("occurrence")
        tl.store(out_ptr + offs, acc + j.to(tl.float32))

    return seed_compute_tt, seed_memory_tt


def print_table(results, kernels, inners, unit):
    print(f"\n{'kernel':<14}{'inner':>6}{'baseline us':>13}{'inactive us':>13}{'proton us':>11}"
          f"{'+us':>10}{'+%':>9}   ({unit})")
    for kernel in kernels:
        for inner in inners:
            base = results[(kernel, inner, "baseline")]
            inactive = results[(kernel, inner, "inactive")]
            prot = results[(kernel, inner, "proton")]
            print(f"seed_{kernel:<9}{inner:>6}{base:>13.2f}{inactive:>13.2f}{prot:>11.2f}"
                  f"{prot - base:>10.2f}{100 * (prot - base) / base:>8.2f}%")


def run_injected(args):
    """Re-runs this script under the injection library and pairs its plan with kernels.jsonl."""
    import subprocess

    trace_dir = os.path.abspath(os.path.join(args.out, "cupti"))
    os.makedirs(trace_dir, exist_ok=True)
    env = dict(os.environ, CUDA_INJECTION64_PATH=os.path.abspath(args.inject), ARGUS_TRACE_DIR=trace_dir)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--kernel", args.kernel, "--inner", args.inner,
           "--mode", args.mode, "--out", args.out, "--launches", str(args.launches), "--warmup", str(args.warmup)]
    rc = subprocess.call(cmd, env=env)
    if rc != 0:
        return rc
    with open(os.path.join(trace_dir, "plan.json")) as f:
        plan_doc = json.load(f)
    records = []
    with open(os.path.join(trace_dir, "kernels.jsonl")) as f:
        for line in f:
            if line.strip():
                records.append(json.loads(line))
    records.sort(key=lambda r: r["start_ns"])
    queues = {}
    for r in records:
        name = r["kernel"][:-3] if r["kernel"].endswith("_tt") else None  # seed_compute_tt -> seed_compute
        if name:
            queues.setdefault(name, []).append(r["duration_ns"])
    results = {}
    for entry, event_us in zip(plan_doc["plan"], plan_doc["event_median_us"]):
        key = (entry["kernel"][5:], entry["inner"], entry["phase"])
        if entry.get("failed"):
            results[key] = float("nan")
            continue
        queue = queues.get(entry["kernel"], [])
        take = entry["untimed"] + entry["timed"]
        if len(queue) < take:
            print(f"error: kernels.jsonl lacks launches of {entry['kernel']}", file=sys.stderr)
            results[key] = float("nan")
            continue
        timed = sorted(queue[entry["untimed"]:take])
        del queue[:take]
        results[key] = timed[len(timed) // 2] / 1e3
        print(json.dumps({"tool": "proton", "timing": "cupti_kernel", "kernel": entry["kernel"],
                          "inner": entry["inner"], "phase": entry["phase"], "mode": args.mode,
                          "median_us": round(results[key], 3), "event_median_us": round(event_us, 3),
                          "launches": entry["timed"]}), flush=True)
    kernels = ["compute", "memory"] if args.kernel == "both" else [args.kernel]
    inners = [int(x) for x in args.inner.split(",") if x]
    print_table(results, kernels, inners, "CUPTI kernel durations, medians")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="both", choices=["compute", "memory", "both"])
    parser.add_argument("--inner", default="8,16,32,64,128,256,512")
    parser.add_argument("--mode", default="default", choices=["default", "clock32"])
    parser.add_argument("--out", default="proton-out")
    parser.add_argument("--warmup-ms", type=float, default=25.0)
    parser.add_argument("--rep-ms", type=float, default=200.0)
    parser.add_argument("--check", action="store_true", help="import check only (no GPU)")
    parser.add_argument("--inject", default="", help="libargus_inject.so: time with CUPTI kernel durations")
    parser.add_argument("--launches", type=int, default=200, help="timed launches per configuration (--inject)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed launches per configuration (--inject)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inject and not args.child and not args.check:
        return run_injected(args)

    import triton
    import triton.profiler as proton

    compute_k, memory_k = build_kernels()
    if args.check:
        print(json.dumps({"check": "ok", "triton": triton.__version__,
                          "kernels": [compute_k.fn.__name__, memory_k.fn.__name__]}))
        return 0

    import torch

    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 77
    os.makedirs(args.out, exist_ok=True)
    inners = [int(x) for x in args.inner.split(",") if x]
    kernels = ["compute", "memory"] if args.kernel == "both" else [args.kernel]

    out = torch.empty(CTAS * THREADS, device="cuda", dtype=torch.float32)
    gen = torch.Generator().manual_seed(12345)
    order = torch.randperm(TABLE, generator=gen)
    nxt = torch.empty(TABLE, dtype=torch.int32)
    nxt[order] = torch.roll(order, -1).to(torch.int32)  # one random cycle through the table
    nxt = nxt.cuda()
    values = ((torch.arange(TABLE) % 7).to(torch.float32) * 0.125).cuda()

    def launcher(kernel, inner, scopes):
        if kernel == "compute":
            return lambda: compute_k[(CTAS, )](out, inner, 0.9999, 1e-4, BLOCK=THREADS, OCC=OCCURRENCES,
                                               SCOPES=scopes, num_warps=NUM_WARPS)
        return lambda: memory_k[(CTAS, )](out, nxt, values, inner, BLOCK=THREADS, OCC=OCCURRENCES,
                                          TABLE_MASK=TABLE - 1, SCOPES=scopes, num_warps=NUM_WARPS)

    def bench(fn):
        try:
            fn()
            torch.cuda.synchronize()
            return 1e3 * triton.testing.do_bench(fn, warmup=args.warmup_ms, rep=args.rep_ms, return_mode="median")
        except Exception as e:  # e.g. scopes that do not compile without Proton active
            print(f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
            return float("nan")

    plan = []

    def loop(kernel, inner, phase, fn):
        """--inject child: 1 + warmup + launches launches, each synchronized; event-timed median."""
        try:
            fn()
            torch.cuda.synchronize()
            for _ in range(args.warmup):
                fn()
                torch.cuda.synchronize()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            times = []
            for _ in range(args.launches):
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(1e3 * start.elapsed_time(end))
            plan.append({"kernel": f"seed_{kernel}", "inner": inner, "phase": phase, "untimed": 1 + args.warmup,
                         "timed": args.launches})
            times.sort()
            return times[len(times) // 2]
        except Exception as e:
            print(f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
            plan.append({"kernel": f"seed_{kernel}", "inner": inner, "phase": phase, "failed": True})
            return float("nan")

    results = {}
    for phase in ("baseline", "inactive", "proton"):
        if phase == "proton":
            opts = "clock32" if args.mode == "clock32" else ""
            mode = proton.mode.Default(optimizations=opts) if opts else proton.mode.Default()
            proton.start(os.path.join(args.out, "trace_overhead"), backend="instrumentation", mode=mode)
        for kernel in kernels:
            for inner in inners:
                fn = launcher(kernel, inner, phase != "baseline")
                us = loop(kernel, inner, phase, fn) if args.child else bench(fn)
                results[(kernel, inner, phase)] = us
                print(json.dumps({"tool": "proton", "kernel": f"seed_{kernel}", "inner": inner, "phase": phase,
                                  "mode": args.mode, "median_us": round(us, 3)}), flush=True)
        if phase == "proton":
            proton.finalize()
    if args.child:
        with open(os.path.join(os.environ["ARGUS_TRACE_DIR"], "plan.json"), "w") as f:
            json.dump({"plan": plan, "event_median_us": [results[(p["kernel"][5:], p["inner"], p["phase"])]
                                                         for p in plan]}, f)
        return 0

    print_table(results, kernels, inners, "triton.testing.do_bench medians")
    return 0


if __name__ == "__main__":
    sys.exit(main())

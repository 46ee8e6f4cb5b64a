#!/usr/bin/env python3
"""A short optimization loop over the Triton TMA matmul's configuration, steered by Argus region
reports.

Each candidate configuration (BLOCK_K, NUM_STAGES, num_warps) is its own program: a spec that
runs run.py with ARGUS_MATMUL_CONFIG set (the baseline is examples/triton_matmul/argus.yaml
itself, so an earlier `argus query` of it is reused). For every candidate the loop asks Argus for
the `duration` of every region of kernel `matmul_tma_argus` -- mainloop, mainloop/iteration (one
K step) and epilogue, per warp, observed from a traced run -- and uses them to pick the next
candidate:

  * the objective is one tile's time, mainloop + epilogue medians: the grid (64 CTAs for
    1024x1024) is a single wave on an H200, so a tile's time is the kernel's time;
  * when the mainloop dominates and its K steps are uneven (p95 well above the median: some steps
    wait for their TMA loads), deeper pipelining (NUM_STAGES + 1) is tried first;
  * when the K steps are even, the per-step cost (mbarrier wait, wgmma issue) is what remains, so
    fewer, larger steps (BLOCK_K x 2) are tried first;
  * when the epilogue dominates, more warps (num_warps 8) share the accumulator conversion and
    store.

Candidates whose pipeline does not fit in shared memory are skipped with the reason. Moves are
greedy: a better candidate becomes the new base. Without a GPU the loop shows the plans Argus
would run, says why nothing could be measured, and exits 77.

Usage: optimize.py [--workspace DIR] [--budget N] [--out DIR]
"""

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))
import argus  # noqa: E402

KERNEL = "matmul_tma_argus"
BASE = {"BLOCK_K": 64, "NUM_STAGES": 3, "num_warps": 4}
BLOCK_M = BLOCK_N = 128
K = 512  # run.py's default problem: 1024 x 1024 x 512
SMEM_LIMIT = 227 * 1024  # bytes of shared memory one CTA may use on sm_90
SKIP = 77


def name_of(c):
    return f"bk{c['BLOCK_K']}_s{c['NUM_STAGES']}_w{c['num_warps']}"


def describe(c):
    return f"BLOCK_K={c['BLOCK_K']} NUM_STAGES={c['NUM_STAGES']} num_warps={c['num_warps']}"


def smem_bytes(c):
    """Shared memory of the pipelined A and B tiles (fp16) plus the epilogue's C tile."""
    return 2 * (c["NUM_STAGES"] * (BLOCK_M + BLOCK_N) * c["BLOCK_K"] + BLOCK_M * BLOCK_N)


def spec_for(c, spec_dir):
    """The program spec of candidate `c` (the example's own spec for the baseline)."""
    if c == BASE:
        return HERE / "argus.yaml"
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = spec_dir / f"{name_of(c)}.yaml"
    config = ",".join(f"{k}={v}" for k, v in c.items())
    spec.write_text(
        f"# optimize.py candidate {describe(c)}\n"
        f"name: triton_matmul_{name_of(c)}\n"
        "language: triton\n"
        f"script: {HERE / 'run.py'}\n"
        f"sources: [{HERE / 'kernel.py'}]\n"
        "python: python3\n"
        "run:\n"
        "  success: {exit_code: 0, stdout_contains: PASS}\n"
        "  skip_exit_code: 77\n"
        f"  env: {{ARGUS_MATMUL_CONFIG: \"{config}\"}}\n"
        "kernels:\n"
        f"  - name: {KERNEL}\n"
        "    regions:\n"
        "      - path: mainloop\n"
        "      - path: mainloop/iteration\n"
        "      - path: epilogue\n")
    return spec


def region_stats(report):
    """{path: duration statistics} of the report's `duration` signal."""
    value = report.signal("duration").value or {}
    return {r["path"]: r["duration"] for r in value.get("regions", [])}


def measure(c, spec_dir, workspace):
    """Queries candidate `c`; returns (metrics, None) or (None, why not)."""
    report = argus.query(spec_for(c, spec_dir), kernel=KERNEL, signals=["duration"],
                         workspace=workspace)
    duration = report.signal("duration")
    if not duration.available:
        why = duration.reason or duration.error or duration.status
        for f in report.failures:
            why = f"{f['task']}: {f['error'].splitlines()[0]}"
        return None, why
    stats = region_stats(report)
    missing = [p for p in ("mainloop", "mainloop/iteration", "epilogue") if p not in stats]
    if missing:
        return None, f"the report lacks region(s) {', '.join(missing)}"
    main, it, epi = stats["mainloop"], stats["mainloop/iteration"], stats["epilogue"]
    executed = report.raw.get("run", {}).get("executed")
    return {
        "mainloop": main["median"],
        "epilogue": epi["median"],
        "iteration": it["median"],
        "iteration_p95": it["p95"],
        "steps": it["count"] / max(main["count"], 1),
        "warps": main["count"],
        "tile": main["median"] + epi["median"],
        "executed": executed,
    }, None


def us(ns):
    return f"{ns / 1000:.2f} us"


def moves(c, m):
    """Neighbouring candidates of `c`, ordered by what its region report suggests, with why."""
    unevenness = m["iteration_p95"] / max(m["iteration"], 1e-9)
    main_share = m["mainloop"] / m["tile"]
    out = []

    def add(why, **change):
        n = dict(c, **change)
        if n != c:
            out.append((n, why))

    if main_share >= 0.5:
        stages = ("K steps are uneven (iteration p95 {:.2f}x the median): some wait for their TMA "
                  "loads, so deepen the pipeline".format(unevenness))
        bigger = ("K steps are even (p95 {:.2f}x the median): per-step cost (mbarrier wait, "
                  "wgmma issue) dominates, so take fewer, larger steps".format(unevenness))
        if unevenness > 1.3:
            add(stages, NUM_STAGES=c["NUM_STAGES"] + 1)
            add("after a deeper pipeline: fewer, larger K steps", BLOCK_K=c["BLOCK_K"] * 2)
        else:
            add(bigger, BLOCK_K=c["BLOCK_K"] * 2)
            add("after larger K steps: a deeper pipeline", NUM_STAGES=c["NUM_STAGES"] + 1)
        add("smaller K steps start the first wgmma sooner", BLOCK_K=c["BLOCK_K"] // 2)
        add("a shallower pipeline frees shared memory and issue slots",
            NUM_STAGES=c["NUM_STAGES"] - 1)
        add("more warps per tile", num_warps=8 if c["num_warps"] == 4 else 4)
    else:
        add("the epilogue is {:.0f}% of the tile: more warps share the conversion and store"
            .format(100 * (1 - main_share)), num_warps=8 if c["num_warps"] == 4 else 4)
        add("then fewer, larger K steps", BLOCK_K=c["BLOCK_K"] * 2)
        add("then a deeper pipeline", NUM_STAGES=c["NUM_STAGES"] + 1)
    return [(n, why) for n, why in out
            if n["BLOCK_K"] in (32, 64, 128) and 2 <= n["NUM_STAGES"] <= 5]


def show_plan(c, spec_dir):
    p = argus.plan(spec_for(c, spec_dir), kernel=KERNEL, signals=["duration"])
    print(f"plan for {describe(c)} ({len(p['plan']['tasks'])} tasks):")
    for t in p["plan"]["tasks"]:
        needs = t.get("requirements") or []
        print(f"  {t['id']:<24} {t['executor']:<14} {'needs ' + ', '.join(needs) if needs else ''}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workspace", default=str(HERE / ".argus"),
                    help="Argus workspace (shared by every candidate; reruns reuse results)")
    ap.add_argument("--budget", type=int, default=4,
                    help="candidates to measure beyond the baseline")
    ap.add_argument("--out", default=None, help="where candidate specs go (default: workspace)")
    args = ap.parse_args()
    spec_dir = Path(args.out or args.workspace) / "candidates"

    print(f"optimizing {KERNEL} (M=N=1024, K={K}, 128x128 tiles) with Argus region reports\n")
    show_plan(BASE, spec_dir)
    base, why = measure(BASE, spec_dir, args.workspace)
    if base is None:
        print(f"\nthe baseline could not be measured: {why}")
        if "GPU" in why:
            print("optimize.py: needs a GPU (Triton compiles and runs the kernel there); the plan "
                  "above is what Argus would run", file=sys.stderr)
            sys.exit(SKIP)
        sys.exit(1)
    tried = {name_of(BASE): base}
    best, best_m = BASE, base

    def report(c, m):
        print(f"  {describe(c)}: tile {us(m['tile'])} = mainloop {us(m['mainloop'])} + epilogue "
              f"{us(m['epilogue'])}; {m['steps']:.0f} K steps of {us(m['iteration'])} "
              f"(p95 {us(m['iteration_p95'])}); {m['warps']} warps traced; "
              f"{m['executed']} tasks executed")

    print("\nbaseline:")
    report(BASE, base)
    spent = 0
    while spent < args.budget:
        options = [(n, w) for n, w in moves(best, best_m) if name_of(n) not in tried]
        fitting = []
        for n, w in options:
            if smem_bytes(n) > SMEM_LIMIT:
                print(f"  skip {describe(n)}: needs {smem_bytes(n) // 1024} KiB of shared memory "
                      f"(limit {SMEM_LIMIT // 1024} KiB)")
                tried[name_of(n)] = None
            else:
                fitting.append((n, w))
        if not fitting:
            print("\nno untried neighbour of the best configuration is left")
            break
        cand, why = fitting[0]
        print(f"\nnext: {describe(cand)} -- {why}")
        m, err = measure(cand, spec_dir, args.workspace)
        spent += 1
        tried[name_of(cand)] = m
        if m is None:
            print(f"  not measured: {err}")
            continue
        report(cand, m)
        gain = 1 - m["tile"] / best_m["tile"]
        if gain > 0.02:
            print(f"  {100 * gain:.1f}% faster per tile: new base")
            best, best_m = cand, m
        else:
            print(f"  not better ({-100 * gain:+.1f}% per tile); keep {describe(best)}")

    print(f"\nbest: {describe(best)}: tile {us(best_m['tile'])} (mainloop "
          f"{us(best_m['mainloop'])}, epilogue {us(best_m['epilogue'])}); baseline tile "
          f"{us(base['tile'])}; {sum(1 for v in tried.values() if v)} configurations measured")


if __name__ == "__main__":
    try:
        main()
    except argus.ArgusError as e:
        print(f"optimize.py: argus: {e.message}", file=sys.stderr)
        sys.exit(1)

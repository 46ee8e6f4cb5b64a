#!/usr/bin/env python3
"""Summarizes real_paired.sh: tracing overhead on a real program's kernel, measured in pairs.

Usage: real_paired.py --kernel NAME [--result-grep REGEX] [--sass FREE_CUBIN TRACED_CUBIN] RUNS

RUNS holds one folder per run, `trace_free-R` and `full_trace-R` for rounds R, each written by
libargus_inject.so (kernels.jsonl: CUPTI's kernel activity; launches.jsonl) with the program's
stdout.txt beside it. The n-th launch of KERNEL in round R's traced run is paired with the n-th
launch in round R's trace-free run; the figure is the median of the pairs' differences (traced -
trace-free) with its 95 % interval (order statistics, no distribution assumed), beside each side's
median duration. It also checks that every traced launch was traced with no record dropped, and
that both builds printed the same result lines: every stdout line, with numbers that vary from run
to run (timings, rates) masked, or only the lines --result-grep matches.

With --sass it compares the kernel's SASS in the two builds (cuobjdump -sass): instruction counts,
and the trace-free build's instructions that the traced build does not keep in the same order,
matching by opcode (difflib's longest matching blocks; registers may be renamed), and those of
them whose opcode the traced build has fewer of (changed, not just moved by ptxas's scheduler):
none of either means the traced kernel is the trace-free one plus the recording instructions.
"""
import argparse
import collections
import difflib
import json
import math
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def median_interval(values):
    """The median and a 95 % interval for it: order statistics n/2 -+ 1.96 sqrt(n)/2."""
    ordered = sorted(values)
    n = len(ordered)
    half = 1.96 * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return statistics.median(ordered), ordered[lo], ordered[hi]


NUMBER = re.compile(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?")


def result_lines(path, grep):
    with open(path, errors="replace") as f:
        lines = [line.rstrip() for line in f]
    if grep:
        return [line for line in lines if re.search(grep, line)]
    # Timings and rates differ run to run: mask every number on lines that name one.
    timing = re.compile(r"(?i)(time|ms\b|us\b|gflop|tflop|gb/s|runtime|avg|elapsed)")
    return [NUMBER.sub("#", line) if timing.search(line) else line for line in lines]


def durations(run, kernel):
    rows = sorted((k for k in read_jsonl(os.path.join(run, "kernels.jsonl"))
                   if k["kernel"] == kernel), key=lambda k: k["start_ns"])
    return [k["end_ns"] - k["start_ns"] for k in rows]


def opcodes(cubin, kernel):
    from sass_waits import instructions
    code = instructions(cubin).get(kernel)
    if code is None:
        raise SystemExit(f"real_paired.py: kernel {kernel} is not in {cubin}")
    # The opcode with its modifiers, without guard predicate and operands.
    return [re.sub(r"^@!?U?P\w+\s+", "", text).split()[0] for *_, text in code]


def sass_diff(free_cubin, traced_cubin, kernel):
    free, traced = opcodes(free_cubin, kernel), opcodes(traced_cubin, kernel)
    matcher = difflib.SequenceMatcher(None, free, traced, autojunk=False)
    kept = sum(block.size for block in matcher.get_matching_blocks())
    added = collections.Counter(traced[j] for tag, _, _, j1, j2 in matcher.get_opcodes()
                                if tag in ("insert", "replace") for j in range(j1, j2))
    # Opcodes the trace-free build has more of than the traced one: changed, not only moved.
    missing = collections.Counter(free) - collections.Counter(traced)
    return {"trace_free_instructions": len(free), "traced_instructions": len(traced),
            "trace_free_not_kept": len(free) - kept,
            "trace_free_missing": sum(missing.values()), "missing": dict(missing.most_common()),
            "added": dict(added.most_common())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--result-grep")
    parser.add_argument("--sass", nargs=2, metavar=("FREE_CUBIN", "TRACED_CUBIN"))
    parser.add_argument("runs")
    args = parser.parse_args()
    rounds = sorted({int(name.rsplit("-", 1)[1]) for name in os.listdir(args.runs)
                     if re.fullmatch(r"(trace_free|full_trace)-\d+", name)})
    if not rounds:
        sys.exit(f"real_paired.py: no runs in {args.runs}")
    problems, diffs, free_all, traced_all = [], [], [], []
    reference = None
    for r in rounds:
        free_run = os.path.join(args.runs, f"trace_free-{r}")
        traced_run = os.path.join(args.runs, f"full_trace-{r}")
        free, traced = durations(free_run, args.kernel), durations(traced_run, args.kernel)
        if not free or len(free) != len(traced):
            problems.append(f"round {r}: {len(free)} trace-free and {len(traced)} traced "
                            f"launches of the kernel")
        diffs += [t - f for f, t in zip(free, traced)]
        free_all += free
        traced_all += traced
        launches = [line for line in read_jsonl(os.path.join(traced_run, "launches.jsonl"))
                    if line.get("kernel") == args.kernel]
        untraced = [line for line in launches if not line.get("traced")]
        dropped = [line for line in launches if line.get("dropped")]
        if untraced or dropped or not launches:
            problems.append(f"round {r}: {len(untraced)} of {len(launches)} launches untraced, "
                            f"{len(dropped)} with dropped records")
        for run in (free_run, traced_run):
            lines = result_lines(os.path.join(run, "stdout.txt"), args.result_grep)
            if reference is None:
                reference = lines
            elif lines != reference:
                changed = next((a, b) for a, b in zip(reference + [""] * len(lines),
                                                      lines + [""] * len(reference)) if a != b)
                problems.append(f"{os.path.basename(run)}: its result lines differ from the "
                                f"first run's: {changed[0]!r} vs {changed[1]!r}")
    if not diffs:
        sys.exit("real_paired.py: no pairs: " + "; ".join(problems))
    median, lo, hi = median_interval(diffs)
    summary = {
        "kernel": args.kernel, "rounds": len(rounds), "pairs": len(diffs),
        "trace_free_median_ns": statistics.median(free_all),
        "traced_median_ns": statistics.median(traced_all),
        "added_median_ns": median, "added_ci95_ns": [lo, hi],
        "added_median_pct": 100.0 * median / statistics.median(free_all),
        "results_equal": not any("result lines" in p for p in problems),
        "result_lines": len(reference or []),
        "problems": problems,
    }
    if args.sass:
        summary["sass"] = sass_diff(args.sass[0], args.sass[1], args.kernel)
    print(json.dumps(summary, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

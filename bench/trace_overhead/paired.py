#!/usr/bin/env python3
"""Summarizes paired runs of the seed kernels (harness --pair, bench/trace_overhead/paired.sh).

Usage: paired.py [--expect-records N] RUN...
Each RUN is a folder the injection library wrote (ARGUS_TRACE_DIR: kernels.jsonl, launches.jsonl)
with the harness's JSON lines beside it in RUN.jsonl. In a paired run every configuration is
`warmup` then `reps` pairs of one launch of the run's own (traced) kernel and one of the other
(trace-free) build's, the own first in even pairs and second in odd ones, each launch alone on the
GPU; the n-th seed kernel in start order therefore has a known configuration, pair and side. Per
configuration it prints the median CUPTI duration of each side over the timed pairs and the median
of the pairs' differences (own - other) with its 95 % confidence interval (order statistics of the
differences, no distribution assumed): clock drift between pairs cancels in each difference, which
medians of separate runs keep. It also checks that every launch the library traced wrote N records
(default 128 x 8 warps x 64) with none dropped, and says so on stderr when not; with N 0 it skips
that check (edits whose records are not the lowering's).
"""
import json
import math
import os
import statistics
import sys

from summarize import harness_chunks


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def median_interval(values):
    """The median of `values` and a 95 % confidence interval for it: the order statistics
    n/2 -+ 1.96 sqrt(n)/2 (the binomial interval for a median)."""
    ordered = sorted(values)
    n = len(ordered)
    half = 1.96 * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return statistics.median(ordered), ordered[lo], ordered[hi]


def summarize(run, expect_records):
    """[(kernel, inner, other median, own median, diff median, diff lo, diff hi)], problems."""
    problems = []
    harness = [r for r in read_jsonl(run + ".jsonl") if r.get("paired")]
    kernels = sorted((k for k in read_jsonl(os.path.join(run, "kernels.jsonl"))
                      if k["kernel"].startswith("seed_")), key=lambda k: k["start_ns"])
    launches = read_jsonl(os.path.join(run, "launches.jsonl"))
    traced = [line for line in launches if line.get("traced")]
    if not traced:
        problems.append("no launch was traced")
    bad = [line for line in traced
           if expect_records and (line["records"] != expect_records or line["dropped"] != 0)]
    if bad:
        problems.append(f"{len(bad)} traced launches with records != {expect_records} or dropped "
                        f"records, first: {bad[0]}")
    rows = []
    for line, chunk in harness_chunks(harness, kernels, 2, problems):
        own, other = [], []
        for r in range(line["warmup"], line["warmup"] + line["reps"]):
            first, second = (k["duration_ns"] / 1e3 for k in chunk[2 * r:2 * r + 2])
            mine, theirs = (first, second) if r % 2 == 0 else (second, first)
            own.append(mine)
            other.append(theirs)
        diff, lo, hi = median_interval([a - b for a, b in zip(own, other)])
        rows.append((line["kernel"], line["inner"], statistics.median(other),
                     statistics.median(own), diff, lo, hi))
    return rows, problems


def main():
    args = sys.argv[1:]
    expect = 128 * 8 * 64
    if args[:1] == ["--expect-records"] and len(args) > 1:
        expect, args = int(args[1]), args[2:]
    if not args:
        sys.exit(__doc__)
    print(f"{'run':<28} {'kernel':<13} {'inner':>5} {'trace-free us':>13} {'traced us':>10} "
          f"{'+us (pairs)':>11} {'95% CI':>15}")
    failed = False
    for run in args:
        rows, problems = summarize(run, expect)
        for p in problems:
            print(f"{run}: {p}", file=sys.stderr)
            failed = True
        for kernel, inner, free, own, diff, lo, hi in rows:
            print(f"{os.path.basename(run):<28} {kernel:<13} {inner:>5} {free:>13.2f} {own:>10.2f} "
                  f"{diff:>11.3f} {lo:>7.3f}..{hi:<7.3f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Summarizes run.sh's Argus runs: trace-free vs full-trace kernel durations of the seed kernels.

Usage: summarize.py OUT [--markdown]
Reads, for VARIANT in trace_free and full_trace:
  OUT/VARIANT.jsonl            the harness's JSON lines (one per kernel and inner size, in launch order)
  OUT/VARIANT/kernels.jsonl    CUPTI kernel activity written by libargus_inject.so
  OUT/VARIANT/launches.jsonl   one line per launch (traced, records, dropped)
The harness launches, per line and in order, `warmup` untimed then `reps` timed launches of one
kernel, so the n-th launch of the run belongs to a known (kernel, inner, rep). The overhead is the
difference of the medians of the CUPTI durations of the timed launches. It also checks that every
full_trace launch was traced with 128 x 8 warps x 64 records and nothing dropped, and that no
trace_free launch was traced.
"""

import json
import os
import statistics
import sys

EXPECTED_RECORDS = 128 * 8 * 64


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def harness_chunks(harness, kernels, per_launch, problems):
    """(harness line, its kernels) in launch order: each line's `warmup` + `reps` launches, each
    of `per_launch` kernels (2 for the harness's --pair); a line the kernels do not match is
    reported in `problems` and left out."""
    at = 0
    for line in harness:
        count = per_launch * (line["warmup"] + line["reps"])
        chunk = kernels[at:at + count]
        at += count
        if len(chunk) < count or any(k["kernel"] != line["kernel"] for k in chunk):
            problems.append(f"kernels.jsonl does not line up with the harness at {line['kernel']} "
                            f"inner={line['inner']}")
            continue
        yield line, chunk


def load_variant(out, variant):
    harness = [r for r in read_jsonl(os.path.join(out, f"{variant}.jsonl")) if "median_us" in r]
    kernels = read_jsonl(os.path.join(out, variant, "kernels.jsonl"))
    launches = read_jsonl(os.path.join(out, variant, "launches.jsonl"))
    kernels.sort(key=lambda r: (r["seq"] if r["seq"] >= 0 else 1 << 62, r["start_ns"]))
    problems = []
    traced = [line for line in launches if line.get("traced")]
    if variant == "full_trace":
        if len(traced) != len(launches):
            problems.append(f"{len(launches) - len(traced)} of {len(launches)} launches not traced")
        bad = [line for line in traced if line["records"] != EXPECTED_RECORDS or line["dropped"] != 0]
        if bad:
            problems.append(f"{len(bad)} launches with records != {EXPECTED_RECORDS} or dropped != 0, "
                            f"first: {bad[0]}")
    elif traced:
        problems.append(f"{len(traced)} trace_free launches were traced")
    results = {}
    for line, chunk in harness_chunks(harness, kernels, 1, problems):
        timed = [k["duration_ns"] / 1e3 for k in chunk[line["warmup"]:]]
        results[(line["kernel"], line["inner"])] = {
            "cupti_median_us": statistics.median(timed),
            "event_median_us": line["median_us"],
        }
    return results, problems


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    markdown = "--markdown" in sys.argv
    free, free_problems = load_variant(out, "trace_free")
    full, full_problems = load_variant(out, "full_trace")
    for p in free_problems:
        print(f"trace_free: {p}", file=sys.stderr)
    for p in full_problems:
        print(f"full_trace: {p}", file=sys.stderr)
    rows = []
    for key in sorted(free, key=lambda k: (k[0], k[1])):
        if key not in full:
            continue
        f, t = free[key], full[key]
        plus = t["cupti_median_us"] - f["cupti_median_us"]
        rows.append({"kernel": key[0], "inner": key[1], "trace_free_us": round(f["cupti_median_us"], 3),
                     "full_trace_us": round(t["cupti_median_us"], 3), "overhead_us": round(plus, 3),
                     "overhead_pct": round(100 * plus / f["cupti_median_us"], 2),
                     "trace_free_event_us": f["event_median_us"], "full_trace_event_us": t["event_median_us"]})
    for row in rows:
        print(json.dumps(row))
    if markdown:
        print("\n| kernel | inner | trace-free (µs) | full trace (µs) | + µs | + % |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            print(f"| {r['kernel']} | {r['inner']} | {r['trace_free_us']:.2f} | {r['full_trace_us']:.2f} | "
                  f"{r['overhead_us']:.2f} | {r['overhead_pct']:.2f} |")
    else:
        print(f"\n{'kernel':<14}{'inner':>6}{'trace-free us':>15}{'full-trace us':>15}{'+us':>9}{'+%':>8}"
              f"{'events: free/full us':>24}")
        for r in rows:
            print(f"{r['kernel']:<14}{r['inner']:>6}{r['trace_free_us']:>15.2f}{r['full_trace_us']:>15.2f}"
                  f"{r['overhead_us']:>9.2f}{r['overhead_pct']:>7.2f}%"
                  f"{r['trace_free_event_us']:>13.2f}/{r['full_trace_event_us']:.2f}")
    return 1 if (free_problems or full_problems) else 0


if __name__ == "__main__":
    sys.exit(main())

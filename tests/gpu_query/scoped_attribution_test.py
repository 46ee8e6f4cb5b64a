#!/usr/bin/env python3
"""GPU test of attribution by scope (issue 31): per-PC counters restricted to a scope through an
unscoped trace's occurrences (synthesis::scopeSignal).

examples/warp_specialized: inst_mix and stall_reasons under role=producer and role=consumer, side
by side. Every region of this kernel runs in one role only, so both scoped answers must be exact,
each role's regions keep their unscoped values and the other role's are 0 (the ground truth by
construction: a region's executions happen inside its occurrences), and the two roles' values add
up to the unscoped ones region by region. With a CUTLASS program (examples/cutlass_hopper, the
package's own sources; SPEC given), the same for its derived regions under warpgroup=0 (the
producer warp group) and warpgroup=1..2 (the consumers).
Usage: scoped_attribution_test.py ARGUS SOURCE_DIR OUTDIR [CUTLASS_SPEC]. Exits 77 without a GPU;
every report goes to OUTDIR/scoped-<name>.json.
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpu_checks import argus_query, check, failures, require_gpu  # noqa: E402

argus, source, outdir = sys.argv[1], sys.argv[2], sys.argv[3]
cutlass = sys.argv[4] if len(sys.argv) > 4 else None
require_gpu()
SIGNALS = "inst_mix,stall_reasons"


def numbers(v):
    """The value's numbers by key (a number is {"": n})."""
    if isinstance(v, (int, float)):
        return {"": float(v)}
    return {k: float(x) for k, x in (v or {}).items() if isinstance(x, (int, float))}


def side_by_side(name, args, scopes):
    ws = tempfile.mkdtemp(prefix=f"argus-scoped-{name}-")
    reports = {"all": argus_query(argus, ws, *args, "--signals", SIGNALS)}
    for s in scopes:
        reports[s] = argus_query(argus, ws, *args, "--signals", SIGNALS, "--scope", s)
    with open(os.path.join(outdir, f"scoped-{name}.json"), "w") as f:
        json.dump(reports, f, indent=1)
    for signal in SIGNALS.split(","):
        base = reports["all"]["signals"][signal]
        check(base["status"] == "succeeded", f"{name} {signal} unscoped: {base['status']}")
        if base["status"] != "succeeded":
            continue
        summed = {}
        for s in scopes:
            entry = reports[s]["signals"][signal]
            check(entry["status"] == "succeeded", f"{name} {signal} {s}: {entry['status']}")
            if entry["status"] != "succeeded":
                continue
            v = entry["value"]
            check(v.get("scope_method", {}).get("method") == "occurrence_share",
                  f"{name} {signal} {s}: scoped through occurrences")
            shares = {r: row["scope_share"]["fraction"] for r, row in v["regions"].items()}
            print(f"{name} {signal} {s}: shares {shares}; not scoped "
                  f"{[n['region'] for n in v['not_scoped']]}")
            if name == "warp_specialized":
                check(v["exact"], f"{name} {signal} {s}: exact ({v['estimate_reasons']})")
                check(all(f in (0.0, 1.0) for f in shares.values()),
                      f"{name} {signal} {s}: every region in one role")
            for r, row in v["regions"].items():
                for k, x in numbers(row["value"]).items():
                    summed[(r, k)] = summed.get((r, k), 0.0) + x
            top = sorted(((sum(numbers(row["value"]).values()), r)
                          for r, row in v["regions"].items()), reverse=True)[:4]
            print(f"{name} {signal} {s}: top regions {top}")
        # The scopes partition the warps: their values add up to the unscoped ones.
        for r, row in base["value"]["regions"].items():
            if not any(r in reports[s]["signals"][signal]["value"].get("regions", {})
                       for s in scopes):
                continue
            for k, x in numbers(row["value"]).items():
                check(abs(summed.get((r, k), 0.0) - x) <= 1e-6 * max(1.0, abs(x)),
                      f"{name} {signal} {r} {k or 'value'}: scopes add to {summed.get((r, k))}, "
                      f"unscoped {x}")


side_by_side("warp_specialized",
             ["--program", f"{source}/examples/warp_specialized/argus.yaml"],
             ["role=producer", "role=consumer"])
if cutlass:
    kernel = next(line.split("name:")[1].split()[0] for line in open(cutlass)
                  if line.startswith("  - name:"))
    side_by_side("cutlass", ["--program", cutlass, "--kernel", kernel, "--derive", "loops,ops"],
                 ["warpgroup=0", "warpgroup=1..2"])
print("all checks passed" if not failures else f"{len(failures)} checks failed")
sys.exit(1 if failures else 0)

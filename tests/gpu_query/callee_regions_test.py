#!/usr/bin/env python3
"""GPU test: regions inside a device function that stays a call are traced as the kernel's.

examples/callee_regions calls its __noinline__ helper tileStep (regions `load`, `combine`) once
per trip of the kernel's loop region `tiles/tile` (iteration = the tile, 8 trips). Its regions
run as `tiles/tile/load` and `tiles/tile/combine`; per warp (64 blocks x 4 warps = 256) the
occurrences are fixed: tiles 1, tiles/tile 8, load 8, combine 8. `argus query --signals
duration,inst_executed` must give those counts, nested times (a tile's callee regions take less
than the tile), exact attributed instruction counts for the callee's regions, and `--scope
iter=3` on `tiles/tile/combine` one occurrence per warp: the helper's regions take the calling
tile's iteration. Exits 77 (skip) when there is no GPU. Usage: callee_regions_test.py ARGUS SRC
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpu_checks import argus_query, check, failures, require_gpu  # noqa: E402

argus, source = sys.argv[1], sys.argv[2]
require_gpu()
spec = f"{source}/examples/callee_regions/argus.yaml"
WARPS, TILES = 64 * 128 // 32, 8

with tempfile.TemporaryDirectory(prefix="argus-callee-") as ws:
    report = argus_query(argus, ws, "--program", spec, "--signals", "duration,inst_executed",
                         "--require-gpu")
    signal = report["signals"]["duration"]
    check(signal["status"] == "succeeded", f"duration {signal['status']}")
    regions = {r["path"]: r["duration"] for r in (signal.get("value") or {}).get("regions", [])}
    print(json.dumps({p: {k: d.get(k) for k in ("count", "median", "total")}
                      for p, d in regions.items()}))
    expected = {"tiles": WARPS, "tiles/tile": WARPS * TILES, "tiles/tile/load": WARPS * TILES,
                "tiles/tile/combine": WARPS * TILES}
    for path, count in expected.items():
        got = (regions.get(path) or {}).get("count")
        check(got == count, f"{path}: {got} occurrences, expected {count}")
    tile = (regions.get("tiles/tile") or {}).get("total") or 0
    inner = sum((regions.get(p) or {}).get("total") or 0
                for p in ("tiles/tile/load", "tiles/tile/combine"))
    check(0 < inner < tile, f"the callee's regions ({inner} ns) inside the tiles' ({tile} ns)")
    executed = report["signals"]["inst_executed"]
    check(executed.get("status") == "succeeded", f"inst_executed {executed.get('status')}")
    doc = executed.get("value") or {}
    per = {r: v.get("value") for r, v in (doc.get("regions") or {}).items()}
    print("inst_executed per region:", json.dumps(per))
    check(doc.get("exact") is True, f"inst_executed exact ({doc.get('estimate_reasons')})")
    check((per.get("tiles/tile/combine") or 0) > (per.get("tiles/tile/load") or 0) > 0,
          "the helper's regions have their own instructions (combine's loop > load)")

with tempfile.TemporaryDirectory(prefix="argus-callee-iter-") as ws:
    report = argus_query(argus, ws, "--program", spec, "--region", "tiles/tile/combine",
                         "--scope", "iter=3", "--signals", "duration", "--require-gpu")
    signal = report["signals"]["duration"]
    check(signal["status"] == "succeeded", f"scoped duration {signal['status']}")
    regions = {r["path"]: r["duration"] for r in (signal.get("value") or {}).get("regions", [])}
    got = (regions.get("tiles/tile/combine") or {}).get("count")
    check(got == WARPS, f"tiles/tile/combine at iter=3: {got} occurrences, expected {WARPS}")

print(f"{len(failures)} checks failed" if failures else "all checks passed")
sys.exit(1 if failures else 0)

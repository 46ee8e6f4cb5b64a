#!/usr/bin/env python3
"""GPU test of a Triton program version made from an edited TTGIR (issue 8): an optimizer's loop.

1. `argus query` the Triton TMA matmul (examples/triton_matmul) for `epilogue` durations;
2. take the TTGIR Triton compiled (`argus.dumped_ttgir`: the query's dump run kept it) and
   edit it: the epilogue's markers renamed `store`, a region that exists only in the edit;
3. `argus ws fork v1 --file matmul_tma_argus.ttgir=EDITED` and `argus query --version vN
   --region store`: Triton must compile the kernel from the edit (the region is found in its
   PTX and traced), 64 CTAs x 4 warps = 256 occurrences, durations like the epilogue's;
4. the fork's measurement variants are versions derived from the fork.
Exits 77 (skip) without a GPU or without torch/triton. Usage: triton_fork_test.py ARGUS SRC
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
spec = f"{source}/examples/triton_matmul/argus.yaml"
kernel = "matmul_tma_argus"


def run(*args):
    done = subprocess.run([argus, *args], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"argus {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def region(report, path):
    regions = report["signals"]["duration"]["value"]["regions"]
    return next((r for r in regions if r["path"] == path), None)


with tempfile.TemporaryDirectory() as ws:
    base = argus_query(argus, ws, "--program", spec, "--kernel", kernel, "--region", "epilogue",
                       "--signals", "duration", timeout=600)
    epilogue = region(base, "epilogue")
    check(epilogue is not None and epilogue["duration"]["count"] == 256,
          f"base: epilogue has 256 occurrences ({epilogue and epilogue['duration']['count']})")
    roots = [v for v in json.loads(run("ws", "list", "--workspace", ws, "--json"))["versions"]
             if v["kind"] == "program" and not v.get("base")]
    check(len(roots) == 1, f"one program version after the first query ({len(roots)})")

    # The TTGIR the query's dump run kept, as an optimizer gets it (python/argus).
    sys.path.insert(0, os.path.join(source, "python"))
    os.environ["ARGUS_BIN"] = argus
    import argus as client  # noqa: E402
    try:
        ttgir = client.dumped_ttgir(ws, kernel, program=spec)
        check("@argus begin epilogue" in ttgir, "argus.dumped_ttgir: the query's TTGIR")
    except client.ArgusError as e:
        check(False, f"argus.dumped_ttgir: {e.message}")
        out = os.path.join(ws, "dumped")
        run("build", "--program", spec, "--variant", "trace_free", "-o", out)
        with open(os.path.join(out, f"{kernel}.ttgir")) as f:
            ttgir = f.read()
    edited = ttgir.replace("@argus begin epilogue", "@argus begin store") \
                  .replace("@argus end epilogue", "@argus end store")
    check(edited.count("@argus begin store") == 1 and edited.count("@argus end store") == 1,
          "the edit renames the epilogue's two markers")
    path = os.path.join(ws, "edited.ttgir")
    with open(path, "w") as f:
        f.write(edited)
    fork = json.loads(run("ws", "fork", roots[0]["id"], "--file", f"{kernel}.ttgir={path}",
                          "--label", "epilogue renamed store", "--workspace", ws, "--json"))["id"]

    report = argus_query(argus, ws, "--version", fork, "--kernel", kernel, "--region", "store",
                         "--signals", "duration", timeout=600)
    store = region(report, "store")
    check(report["signals"]["duration"]["status"] == "succeeded", "fork: duration succeeded")
    check(store is not None and store["duration"]["count"] == 256,
          f"fork: `store` (only in the edited TTGIR) has 256 occurrences "
          f"({store and store['duration']['count']})")
    if store and epilogue:
        a, b = store["duration"]["median"], epilogue["duration"]["median"]
        check(0.5 < a / b < 2, f"fork: store median {a} within 2x of the base's epilogue {b}")
    versions = json.loads(run("ws", "list", "--workspace", ws, "--json"))["versions"]
    derived = [v for v in versions if v.get("base") == fork and v["kind"] == "variant"]
    check(len(derived) >= 1, f"fork: its traced variant is a version derived from {fork} "
          f"({len(derived)})")
    again = argus_query(argus, ws, "--version", fork, "--kernel", kernel, "--region", "store",
                        "--signals", "duration", timeout=600)
    check(region(again, "store")["duration"] == store["duration"],
          "fork: the same query again gives the same numbers (reused)")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all Triton fork checks passed")

#!/usr/bin/env python3
"""Builds a fuzz target's seed corpus from files already in the tree, and optionally replays it.

    seed_corpus.py TARGET OUTDIR            write the seeds of TARGET into OUTDIR
    seed_corpus.py TARGET --replay BINARY   write them to a temporary folder and run
                                            BINARY (fuzz_TARGET_replay) on it and on
                                            tests/fuzz/regressions/TARGET

Seeds are real inputs: PTX from nvcc and Triton (tests/data/ptx, tests/data/triton), the
examples' program specs and the recipes, trace bundles captured on the H200
(tests/data/reports/*/inputs, tests/data/reports/*/evidence), Proton's Chrome trace, and the PC,
ncu and system-trace evidence in tests/data, and byte patches of a real workspace's argus.db
(tests/data/workspace). Targets that read several formats take a first
byte that picks the reader (see the target's source); the seeds carry it.
"""
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = ROOT / "tests" / "data"
LIMIT = 64 * 1024  # fuzz_util.h kMaxInput: larger inputs are skipped by the targets


def files(*patterns):
    out = []
    for pattern in patterns:
        out += sorted(p for p in ROOT.glob(pattern) if p.is_file())
    return out


def seeds(target):
    """(name, bytes) pairs."""
    if target in ("ptx", "regions"):
        return [(p.name, p.read_bytes()) for p in files("tests/data/ptx/*.ptx", "tests/data/passes/*.ptx")]
    if target == "ttgir":
        return [(p.name, p.read_bytes()) for p in files("tests/data/triton/*.ttgir", "tests/data/triton/*.ttir")]
    if target == "scope":
        return [(p.name, p.read_bytes()) for p in files("tests/fuzz/seeds/scope/*")]
    if target == "spec":
        specs = files("examples/*/argus.yaml", "tests/gpu_query/*.yaml", "tests/gpu_query/*/argus.yaml")
        recipes = files("recipes/*.yaml")
        region_files = files("tests/fuzz/seeds/regions_file/*")
        return [("spec_" + p.parent.name + "_" + p.name, b"\0" + p.read_bytes()) for p in specs] + [
            ("recipe_" + p.name, b"\1" + p.read_bytes()) for p in recipes] + [
            ("regions_" + p.name, b"\2" + p.read_bytes()) for p in region_files]
    if target == "trace":
        bundles = files("tests/data/reports/*/inputs/evidence", "tests/data/reports/tma_gemm_op_latency/evidence/*_0_0_*")
        proton = files("tests/data/proton/*.chrome_trace")
        return [(p.parent.parent.name + "_" + p.name, p.read_bytes()) for p in bundles + proton]
    if target == "evidence":
        picks = [(0, "tests/data/pc_bundles/*/*.bundle.json"), (1, "tests/data/pc_evidence/*.json"),
                 (2, "tests/data/ncu/*source*.csv"), (3, "tests/data/ncu/*raw*.csv"),
                 (4, "tests/data/system_trace/*.jsonl"), (4, "tests/data/system_trace/nccl/*.jsonl")]
        out = []
        for byte, pattern in picks:
            out += [(f"{byte}_{p.name}", bytes([byte]) + p.read_bytes()) for p in files(pattern)]
        return out
    if target == "workspace":
        # Patches (u32 offset, byte) of tests/data/workspace/argus.db: none, the SQLite header's
        # page size, the schema table's first page, a row of the last page.
        size = (DATA / "workspace" / "argus.db").stat().st_size
        patch = lambda offset, byte: offset.to_bytes(4, "little") + bytes([byte])
        # The first byte picks the readers (fuzz_workspace.cpp): every patch for each of the five.
        patches = [("unpatched", b""), ("page_size", patch(16, 0x20)),
                   ("schema_page", patch(150, 0x41) + patch(400, 0)), ("last_page", patch(size - 100, 0xff))]
        return [(f"{name}_{group}", bytes([group]) + data) for group in range(5) for name, data in patches]
    sys.exit(f"seed_corpus.py: unknown target `{target}`")


def write(target, outdir):
    outdir.mkdir(parents=True, exist_ok=True)
    written = 0
    for name, data in seeds(target):
        if len(data) > LIMIT:
            continue
        (outdir / name).write_bytes(data)
        written += 1
    return written


def main():
    if len(sys.argv) == 4 and sys.argv[2] == "--replay":
        target, binary = sys.argv[1], sys.argv[3]
        with tempfile.TemporaryDirectory(prefix=f"argus-seeds-{target}-") as tmp:
            count = write(target, pathlib.Path(tmp))
            args = [binary, "--expect-min", str(max(count, 3)), tmp]
            regressions = HERE / "regressions" / target
            if regressions.is_dir():
                args.append(str(regressions))
            return subprocess.call(args)
    if len(sys.argv) == 3:
        count = write(sys.argv[1], pathlib.Path(sys.argv[2]))
        print(f"{count} seeds of {sys.argv[1]} in {sys.argv[2]}")
        return 0 if count >= 3 else 1
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())

"""Tests of the Python client against the real argus binary (ARGUS_BIN) and real fixtures:
Triton 3.6 TTGIR (tests/data/triton, see make_fixtures.py), nvcc PTX (tests/data/ptx) and the
example program specs. No GPU needed: GPU collections are reported as not collected here."""

import json
import os
import shutil
import tempfile
import unittest
from pathlib import Path

import argus

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


class Regions(unittest.TestCase):
    def test_ttgir_proton_scopes(self):
        r = argus.regions(DATA / "triton" / "matmul_tma_proton.ttgir")
        self.assertEqual(r["representation"], "ttgir")
        (kernel,) = r["kernels"]
        self.assertEqual(kernel["name"], "matmul_tma_proton")
        self.assertEqual([x["path"] for x in kernel["regions"]], ["mainloop", "epilogue"])

    def test_region_ids_agree_between_ttir_and_ttgir(self):
        a = argus.regions(DATA / "triton" / "matmul_tma_proton.ttir")["kernels"][0]["regions"]
        b = argus.regions(DATA / "triton" / "matmul_tma_proton.ttgir")["kernels"][0]["regions"]
        self.assertEqual([x["id"] for x in a], [x["id"] for x in b])

    def test_ptx(self):
        r = argus.regions(DATA / "ptx" / "examples_tma_gemm.ptx")
        paths = [x["path"] for x in r["kernels"][0]["regions"]]
        self.assertIn("mainloop", paths)

    def test_malformed_ttgir_raises_with_the_engines_message(self):
        text = (DATA / "triton" / "matmul_tma_proton.ttgir").read_text()
        broken = text.replace('proton.record end "epilogue"', 'proton.record end "mainloop"')
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "broken.ttgir"
            p.write_text(broken)
            with self.assertRaises(argus.ArgusError) as e:
                argus.regions(p)
        self.assertIn("broken.ttgir:", e.exception.message)
        self.assertIn("must nest", e.exception.message)


class DerivedRegions(unittest.TestCase):
    """Regions derived without editing the source (docs/regions-file.md), on nvcc PTX."""

    def test_derive_list_nests_ops_in_loops(self):
        r = argus.regions(DATA / "ptx" / "derive_loops.ptx", derive=["loops", "ops"])
        (kernel,) = [k for k in r["kernels"] if k["entry"]]
        by_path = {x["path"]: x for x in kernel["regions"]}
        self.assertIn("loop_derive_loops_12/loop_derive_loops_13", by_path)
        self.assertEqual(by_path["loop_derive_loops_12/bar_sync"]["derived"], "op:bar_sync")

    def test_region_file_refines_a_marked_region(self):
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "regions.yaml"
            f.write_text("regions:\n  - refine: mainloop\n    regions:\n"
                         "      - {name: wait, select: op:mbarrier_wait}\n")
            r = argus.regions(DATA / "ptx" / "examples_tma_gemm.ptx", regions_file=f)
        paths = [x["path"] for x in r["kernels"][0]["regions"]]
        self.assertIn("mainloop/wait", paths)

    def test_a_selector_that_selects_nothing_says_what_exists(self):
        with self.assertRaises(argus.ArgusError) as e:
            argus.regions(DATA / "ptx" / "derive_loops.ptx", derive="op:wgmma")
        self.assertIn("no wgmma instruction", e.exception.message)
        self.assertIn("bar_sync", e.exception.message)

    def test_a_region_file_with_an_unknown_field_names_its_line(self):
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "regions.yaml"
            f.write_text("regions:\n  - name: a\n    selekt: loops\n")
            with self.assertRaises(argus.ArgusError) as e:
                argus.regions(DATA / "ptx" / "derive_loops.ptx", regions_file=f)
        self.assertIn("regions.yaml:3:5", e.exception.message)
        self.assertIn("unknown field `selekt`", e.exception.message)


class PlanAndQuery(unittest.TestCase):
    spec = ROOT / "examples" / "tma_gemm" / "argus.yaml"

    def test_plan_lists_tasks_and_separations(self):
        p = argus.plan(self.spec, kernel="tma_gemm", region="mainloop",
                       signals=["duration", "op_latency"])
        self.assertEqual(p["argus_query_plan"], 1)
        self.assertTrue(any(t["id"].startswith("collect/") for t in p["plan"]["tasks"]))

    def test_unknown_region_raises(self):
        with self.assertRaises(argus.ArgusError) as e:
            argus.plan(self.spec, kernel="tma_gemm", region="no_such_region",
                       signals=["duration"])
        self.assertIn("no_such_region", e.exception.message)
        self.assertIn("mainloop", e.exception.message)  # the message lists what exists

    def test_no_signals_is_refused_before_running(self):
        with self.assertRaises(argus.ArgusError):
            argus.plan(self.spec, kernel="tma_gemm", signals=[])

    @unittest.skipIf(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                     "nvcc is needed to build the variants")
    def test_query_then_fork_with_an_edited_file(self):
        with tempfile.TemporaryDirectory() as ws:
            report = argus.query(self.spec, kernel="tma_gemm", region="mainloop",
                                 signals=["duration"], workspace=ws)
            duration = report.signal("duration")
            if duration.available:  # a GPU ran it
                self.assertEqual(duration.qualification, "observed")
            else:
                self.assertEqual(duration.status, "not collected")
                self.assertIn("GPU", duration.reason)
            program = [v for v in argus.versions(ws) if v.get("kind") == "program"]
            self.assertTrue(program)
            base = program[0]["id"]
            ttgir = DATA / "triton" / "matmul_tma_proton.ttgir"
            new = argus.fork(base, {"kernel.ttgir": ttgir}, workspace=ws, label="edit 1")
            self.assertNotEqual(new, base)
            # A version's files and artifacts read back byte for byte.
            self.assertEqual(argus.read_artifact(f"{new}:kernel.ttgir", workspace=ws),
                             ttgir.read_bytes())
            self.assertEqual(argus.read_artifact(f"{base}:argus.yaml", workspace=ws),
                             self.spec.read_bytes())
            with self.assertRaises(argus.ArgusError) as missing:
                argus.read_artifact(f"{base}:nope.cu", workspace=ws)
            self.assertIn("has no file `nope.cu`", missing.exception.message)
            with self.assertRaises(argus.ArgusError) as none:
                argus.dumped_ttgir(ws)  # a CUDA program: no Triton dump
            self.assertIn("no Triton dump", none.exception.message)
            text = ttgir.read_text().replace('proton.record end "epilogue"', "")
            with self.assertRaises(argus.ArgusError) as e:
                argus.fork(base, {"kernel.ttgir": text}, workspace=ws)
            self.assertIn("still open", e.exception.message)
            # A fork that carries a region file (an agent's regions, no source edit): its
            # queries plan on the derived region.
            regions = Path(ws) / "regions.yaml"
            regions.write_text("regions:\n  - refine: mainloop\n    regions:\n"
                               "      - {name: wait, select: op:mbarrier_wait}\n")
            refined = argus.fork(base, workspace=ws, label="regions", regions_file=regions)
            p = argus.plan(refined, kernel="tma_gemm", region="mainloop/wait",
                           signals=["duration"], workspace=ws)
            self.assertTrue(p["plan"]["tasks"])
            # Comparing the fork with its base needs both versions' traces: without a GPU the
            # error says why.
            if not duration.available:
                with self.assertRaises(argus.ArgusError) as nogpu:
                    argus.compare(base, refined, workspace=ws, kernel="tma_gemm",
                                  region="mainloop")
                self.assertIn("duration was not answered", nogpu.exception.message)
                self.assertIn("GPU", nogpu.exception.message)
            regions.write_text("regions:\n  - {name: x, select: op:nothing}\n")
            with self.assertRaises(argus.ArgusError) as bad:
                argus.fork(base, workspace=ws, regions_file=regions)
            self.assertIn("unknown op kind `nothing`", bad.exception.message)


class TritonPlanAndQuery(unittest.TestCase):
    """The Triton TMA matmul (examples/triton_matmul): planned from its spec's regions, because
    its PTX only exists after the script ran on a GPU. ARGUS_DEVICES="" stands for a machine
    without a GPU, so these run the same everywhere."""

    spec = ROOT / "examples" / "triton_matmul" / "argus.yaml"
    no_gpu = {"ARGUS_DEVICES": ""}

    def test_plan_starts_with_a_dump_on_the_gpu(self):
        p = argus.plan(self.spec, kernel="matmul_tma_argus", region="mainloop",
                       signals=["duration"])
        tasks = {t["id"]: t for t in p["plan"]["tasks"]}
        self.assertEqual(tasks["ptx"]["executor"], "triton_dump")
        self.assertEqual(tasks["ptx"]["requirements"], ["gpu"])
        self.assertIn("triton_dump", tasks["ptx"]["outputs"])
        build = tasks["build/full_trace"]
        self.assertIn({"name": "triton_dump", "task": "ptx", "output": "triton_dump"},
                      build["inputs"])
        self.assertEqual(tasks["collect/p0"]["executor"], "region_trace")
        self.assertEqual(p["subtree"], ["mainloop", "mainloop/iteration"])
        ttgir = argus.regions(DATA / "triton" / "matmul_tma_argus.ttgir")
        ids = {r["path"]: r["id"] for r in ttgir["kernels"][0]["regions"]}
        self.assertEqual(p["region_id"], ids["mainloop"])  # the same ID as in the TTGIR

    def test_painted_signals_build_argus_own_cubin(self):
        p = argus.plan(self.spec, kernel="matmul_tma_argus", signals=["inst_mix"])
        builds = [t for t in p["plan"]["tasks"] if t["executor"] == "build_variant"]
        self.assertTrue(builds)
        self.assertIn("cubin", builds[0]["outputs"])

    def test_query_without_a_gpu_says_the_dump_needs_one(self):
        from unittest import mock
        with tempfile.TemporaryDirectory() as ws, mock.patch.dict(os.environ, self.no_gpu):
            report = argus.query(self.spec, kernel="matmul_tma_argus", region="mainloop",
                                 signals=["duration"], workspace=ws)
            duration = report.signal("duration")
            self.assertFalse(duration.available)
            self.assertEqual(duration.status, "not collected")
            self.assertIn("Triton compiles the kernel", duration.reason)
            skipped = {n["task"] for n in report.not_collected}
            self.assertIn("ptx", skipped)
            self.assertIn("collect/p0", skipped)
            self.assertEqual(report.raw["run"]["executed"], 0)
            with self.assertRaises(argus.ArgusError) as e:
                argus.query(self.spec, kernel="matmul_tma_argus", region="mainloop",
                            signals=["duration"], workspace=ws, require_gpu=True)
            self.assertEqual(e.exception.exit_code, 2)

    def test_a_fork_with_an_edited_ttgir_is_planned_from_the_edit(self):
        from unittest import mock
        with tempfile.TemporaryDirectory() as ws, mock.patch.dict(os.environ, self.no_gpu):
            argus.query(self.spec, kernel="matmul_tma_argus", region="mainloop",
                        signals=["duration"], workspace=ws)
            base = [v for v in argus.versions(ws) if v["kind"] == "program"][0]["id"]
            text = (DATA / "triton" / "matmul_tma_argus.ttgir").read_text()
            edited = text.replace("@argus begin epilogue", "@argus begin store") \
                         .replace("@argus end epilogue", "@argus end store")
            fork = argus.fork(base, {"matmul_tma_argus.ttgir": edited}, workspace=ws,
                              label="epilogue renamed store")
            p = argus.plan(fork, kernel="matmul_tma_argus", region="store", signals=["duration"],
                           workspace=ws)
            self.assertEqual(p["subtree"], ["store"])  # a region only the edit has
            with self.assertRaises(argus.ArgusError) as e:
                argus.plan(base, kernel="matmul_tma_argus", region="store", signals=["duration"],
                           workspace=ws)
            self.assertIn("store", e.exception.message)
            report = argus.query(fork, kernel="matmul_tma_argus", region="store",
                                 signals=["duration"], workspace=ws)
            self.assertIn("ptx", {n["task"] for n in report.not_collected})
            with self.assertRaises(argus.ArgusError) as e:
                argus.plan(fork, kernel="matmul_tma_argus", signals=["duration"])
            self.assertIn("workspace", e.exception.message)

    def test_optimize_example_shows_the_plan_and_exits_77_without_a_gpu(self):
        import subprocess
        import sys
        with tempfile.TemporaryDirectory() as ws:
            env = dict(os.environ, **self.no_gpu)
            proc = subprocess.run(
                [sys.executable, str(ROOT / "examples" / "triton_matmul" / "optimize.py"),
                 "--workspace", ws], capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(proc.returncode, 77, proc.stdout + proc.stderr)
        self.assertIn("triton_dump", proc.stdout)
        self.assertIn("needs gpu", proc.stdout)
        self.assertIn("needs a GPU", proc.stderr)


class TraceVerb(unittest.TestCase):
    """`argus trace` on a trace directory in the injection library's format (include/argus/trace/
    format.h: 64-byte header, 32-byte records; compact form), written here byte by byte: 2 CTAs x
    2 warps, each warp one `main` occurrence and two `main/step` occurrences (iterations 0, 1)."""

    def test_decodes_a_trace_directory(self):
        import struct
        trace_map = {"k": {"argus_trace_map": 1, "kernel": "k", "time_base": "globaltimer",
                           "capacity_hint": 4, "overflow": "count",
                           "regions": [{"index": 0, "id": "a", "path": "main", "parent": None},
                                       {"index": 1, "id": "b", "path": "main/step", "parent": 0}],
                           "roles": [], "scope": ""}}
        records = []
        for cta in range(2):
            for warp in range(2):
                t = 1000 * (cta * 2 + warp)
                meta = lambda region: (1 << 31) | (region << 16) | (15 << 12) | 7
                records.append(struct.pack("<QQIIII", t, t + 500, meta(0), cta, 0xFFFFFFFF, warp))
                for it in range(2):
                    b = t + 100 + 200 * it
                    records.append(struct.pack("<QQIIII", b, b + 100, meta(1), cta, it, warp))
        header = struct.pack("<IIIIIIQ", 0x54475241, 1, 4, 4, 2, 0, 0)
        header += struct.pack("<QQQQ", 0x43475241, len(records), 0, 0)
        with tempfile.TemporaryDirectory() as d:
            Path(d, "launch-0.bin").write_bytes(header + b"".join(records))
            Path(d, "launches.jsonl").write_text(json.dumps(
                {"seq": 0, "kernel": "k", "traced": True, "file": "launch-0.bin"}) + "\n")
            Path(d, "trace_map.json").write_text(json.dumps(trace_map))
            out = argus._run(["trace", d, "--json"])
        regions = {r["path"]: r for r in out["duration"]["regions"]}
        self.assertEqual(regions["main"]["duration"]["count"], 4)
        self.assertEqual(regions["main/step"]["duration"]["count"], 8)
        self.assertEqual(regions["main/step"]["duration"]["median"], 100)
        self.assertEqual(regions["main"]["duration"]["median"], 500)

    def test_missing_index_names_the_fix(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "trace_map.json").write_text("{}")
            with self.assertRaises(argus.ArgusError) as e:
                argus._run(["trace", d, "--json"])
        self.assertIn("CUDA_INJECTION64_PATH", e.exception.message)


class ProtonTrace(unittest.TestCase):
    """argus.proton_trace on the trace Proton wrote on the H200 (tests/data/proton/README.md)."""

    FILE = ROOT / "tests" / "data" / "proton" / "matmul_tma_proton.chrome_trace"

    def test_scopes_become_regions_in_cycles(self):
        with tempfile.TemporaryDirectory() as ws:
            out = argus.proton_trace(self.FILE, workspace=ws)
        regions = {r["path"]: r for r in out["duration"]["regions"]}
        self.assertEqual(set(regions), {"mainloop", "epilogue"})
        self.assertEqual(regions["mainloop"]["duration"]["count"], 256)
        self.assertEqual(out["duration"]["unit"], "cycles")
        self.assertEqual(out["source"]["tool"], "proton")
        self.assertEqual(out["source"]["frequency_mhz"], 1000.0)
        self.assertIn("proton_trace", out["provenance"])
        ttgir = argus.regions(ROOT / "tests" / "data" / "triton" / "matmul_tma_proton.ttgir")
        ids = {r["path"]: r["id"] for r in ttgir["kernels"][0]["regions"]}
        self.assertEqual({p: r["id"] for p, r in regions.items()}, ids)

    def test_unknown_kernel_raises_with_the_kernels_in_the_file(self):
        with self.assertRaises(argus.ArgusError) as e:
            argus.proton_trace(self.FILE, kernel="nope")
        self.assertIn("it holds matmul_tma_proton", e.exception.message)


class BuildFromPtx(unittest.TestCase):
    @unittest.skipIf(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                     "nvcc is needed to build the variant")
    def test_build_takes_a_given_ptx_and_rejects_broken_ptx(self):
        import subprocess
        spec = ROOT / "examples" / "tma_gemm" / "argus.yaml"
        ptx = (DATA / "ptx" / "examples_tma_gemm.ptx").read_text()
        with tempfile.TemporaryDirectory() as d:
            good = Path(d) / "k.ptx"
            good.write_text(ptx)
            run = subprocess.run([argus.engine(), "build", "--program", str(spec), "--variant",
                                  "full_trace", "--ptx", str(good), "-o", str(Path(d) / "out")],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertTrue((Path(d) / "out" / "trace_map.json").is_file())
            self.assertIn("__argus_trace", (Path(d) / "out" / "kernel.ptx").read_text())
            bad = Path(d) / "bad.ptx"
            bad.write_text(ptx.replace("mbarrier.init", "mbarrier.innit", 1))
            run = subprocess.run([argus.engine(), "build", "--program", str(spec), "--variant",
                                  "original", "--ptx", str(bad), "-o", str(Path(d) / "bad")],
                                 capture_output=True, text=True)
            self.assertNotEqual(run.returncode, 0)
            self.assertIn("ptxas", run.stderr)


if __name__ == "__main__":
    unittest.main()

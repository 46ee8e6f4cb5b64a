"""Tests of the Python client against the real argus binary (ARGUS_BIN) and real fixtures:
Triton 3.6 TTGIR (tests/data/triton, see make_fixtures.py), nvcc PTX (tests/data/ptx) and the
example program specs. No GPU needed: GPU collections are reported as not collected here."""

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
            text = ttgir.read_text().replace('proton.record end "epilogue"', "")
            with self.assertRaises(argus.ArgusError) as e:
                argus.fork(base, {"kernel.ttgir": text}, workspace=ws)
            self.assertIn("still open", e.exception.message)


if __name__ == "__main__":
    unittest.main()

"""Tests of the Argus MCP server (python/argus/mcp.py) through the MCP SDK's own client over
stdio, against the real argus binary (ARGUS_BIN) and real fixtures. No GPU needed: the server
runs with ARGUS_DEVICES="" (a machine without a GPU), so GPU collections are not collected."""

import json
import os
import sys
import tempfile
import unittest
from contextlib import asynccontextmanager
from pathlib import Path

try:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
except ImportError:  # the interpreter lacks the SDK (scripts/requirements.txt installs it)
    if os.environ.get("ARGUS_TEST_REQUIRE_MCP"):  # ctest's python_mcp: the venv must have it
        raise
    ClientSession = None

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
PTX = DATA / "ptx"
SPEC = ROOT / "examples" / "tma_gemm" / "argus.yaml"


@unittest.skipIf(ClientSession is None, "the mcp package is not installed in this interpreter")
class Server(unittest.IsolatedAsyncioTestCase):
    @asynccontextmanager
    async def session(self, *args):
        env = {k: v for k, v in os.environ.items()
               if k in ("PATH", "HOME", "ARGUS_BIN", "PYTHONPATH", "TMPDIR")}
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT / "python"), *filter(None, [os.environ.get("PYTHONPATH")])])
        env["ARGUS_DEVICES"] = ""  # no GPU, on every machine
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "argus.mcp", *args], env=env, cwd=str(ROOT))
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    yield s

    async def call(self, s, name, args, **kw):
        r = await s.call_tool(name, args, **kw)
        self.assertFalse(r.is_error, r.content[0].text if r.content else r)
        self.assertIsNotNone(r.structured_content)
        return r.structured_content

    async def test_tools_have_input_and_output_schemas(self):
        async with self.session() as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
        self.assertEqual(set(tools), {"list_kernels", "define_regions", "plan_query",
                                      "run_query", "fork_version", "fetch_artifact",
                                      "compare_versions", "summarize_trace"})
        for t in tools.values():
            self.assertEqual(t.input_schema["type"], "object", t.name)
            self.assertTrue(t.output_schema and t.output_schema.get("properties"), t.name)
            self.assertTrue(t.description)
        self.assertEqual(tools["run_query"].input_schema["required"], ["program", "signals"])
        self.assertNotIn("ctx", tools["run_query"].input_schema["properties"])
        self.assertIn("top_regions", json.dumps(tools["run_query"].output_schema))

    async def test_list_kernels_marked_and_derived(self):
        async with self.session() as s:
            r = await self.call(s, "list_kernels", {"target": str(PTX / "examples_tma_gemm.ptx")})
            (k,) = r["kernels"]
            self.assertEqual(k["name"], "tma_gemm")
            paths = [x["path"] for x in k["regions"]]
            self.assertEqual(paths, ["mainloop", "mainloop/tma_load", "mainloop/mma", "epilogue"])
            self.assertEqual(k["regions"][0]["id"], "1444be916c696a75")
            self.assertIsNone(k["regions"][0]["derived"])
            self.assertGreater(k["regions"][0]["ptx_instructions"], 0)

            r = await self.call(s, "list_kernels", {"target": str(PTX / "derive_loops.ptx"),
                                                    "derive": ["loops", "ops"]})
            (k,) = [k for k in r["kernels"] if k["entry"]]
            by_path = {x["path"]: x for x in k["regions"]}
            self.assertIn("loop_derive_loops_12/loop_derive_loops_13", by_path)
            self.assertEqual(by_path["loop_derive_loops_12/bar_sync"]["derived"], "op:bar_sync")
            self.assertEqual(by_path["loop_derive_loops_12"]["derived"], "loops")

            # Bounded: one region listed, the rest counted.
            r = await self.call(s, "list_kernels", {"target": str(PTX / "derive_loops.ptx"),
                                                    "derive": ["loops", "ops"],
                                                    "max_regions": 1})
            (k,) = [k for k in r["kernels"] if k["entry"]]
            self.assertEqual(len(k["regions"]), 1)
            self.assertEqual(k["omitted_regions"], k["region_count"] - 1)

    async def test_define_regions_refines_mainloop(self):
        with tempfile.TemporaryDirectory() as d:
            async with self.session("--regions-dir", d) as s:
                r = await self.call(s, "define_regions", {
                    "target": str(PTX / "examples_tma_gemm.ptx"),
                    "regions": [{"refine": "mainloop", "children": [
                        {"name": "wait", "select": "op:mbarrier_wait"}]}]})
                path = Path(r["regions_file"])
                self.assertEqual(path.parent, Path(d).resolve())
                self.assertIn("refine: \"mainloop\"", path.read_text())
                regions = {x["path"]: x for x in r["tree"]["kernels"][0]["regions"]}
                self.assertEqual(regions["mainloop/wait"]["derived"], "op:mbarrier_wait")
                # The file it wrote is what plan_query takes.
                p = await self.call(s, "plan_query", {
                    "program": str(SPEC), "kernel": "tma_gemm", "region": "mainloop/wait",
                    "signals": ["duration"], "regions_file": str(path)})
                self.assertEqual(p["region"], "mainloop/wait")

                # JSON works too; an unknown selector is a tool error with the engine's message.
                bad = await s.call_tool("define_regions", {
                    "target": str(PTX / "examples_tma_gemm.ptx"), "name": "bad",
                    "format": "json",
                    "regions": [{"name": "x", "select": "op:nothing"}]})
                self.assertTrue(bad.is_error)
                text = bad.content[0].text
                self.assertIn("unknown op kind `nothing`", text)
                self.assertNotIn("Traceback", text)
                self.assertTrue((Path(d) / "bad.json").is_file())

    async def test_plan_query_says_why_runs_are_separate(self):
        async with self.session() as s:
            p = await self.call(s, "plan_query", {
                "program": str(SPEC), "kernel": "tma_gemm", "region": "mainloop",
                "signals": ["duration", "inst_mix"]})
        self.assertEqual(p["subtree"], ["mainloop", "mainloop/tma_load", "mainloop/mma"])
        self.assertEqual(len(p["runs"]), 3)
        self.assertTrue(p["separations"])
        self.assertTrue(all(x["reason"] for x in p["separations"]))
        self.assertIn("patches_binary", json.dumps(p["separations"]))
        self.assertEqual(p["task_count"], len(p["tasks"]))
        self.assertIn("collect/p0", {t["id"] for t in p["tasks"]})

    async def test_run_query_without_a_gpu_then_fork_and_fetch(self):
        progress = []

        async def on_progress(value, total, message):
            progress.append((value, total, message))

        with tempfile.TemporaryDirectory() as ws:
            async with self.session() as s:
                q = await self.call(s, "run_query", {
                    "program": str(SPEC), "kernel": "tma_gemm", "region": "mainloop",
                    "signals": ["duration"], "workspace": ws}, progress_callback=on_progress)
                (duration,) = q["signals"]
                self.assertEqual(duration["name"], "duration")
                self.assertEqual(duration["status"], "not collected")
                self.assertEqual(duration["qualification"], "observed")
                self.assertEqual(duration["unit"], "ns")
                self.assertIn("GPU", duration["reason"])
                tasks = {n["task"]: n["reason"] for n in q["not_collected"]}
                self.assertIn("collect/p0", tasks)
                self.assertIn("needs a GPU", tasks["collect/p0"])
                self.assertEqual(q["failures"], [])
                self.assertEqual(q["workspace"], ws)
                # The report the workspace kept, which fetch_artifact reads back.
                self.assertRegex(q["report"] or "", r"^a[0-9]+$")
                kept = await self.call(s, "fetch_artifact", {"workspace": ws,
                                                             "artifact": q["report"]})
                self.assertIn("argus.report/1", json.dumps(kept))
                # The engine's progress lines arrived as notifications, increasing.
                self.assertTrue(progress)
                self.assertTrue(all(b[0] > a[0] for a, b in zip(progress, progress[1:])))
                self.assertIn("done", progress[-1][2])

                with self.subTest("require_gpu"):
                    r = await s.call_tool("run_query", {
                        "program": str(SPEC), "kernel": "tma_gemm", "region": "mainloop",
                        "signals": ["duration"], "workspace": ws, "require_gpu": True})
                    self.assertTrue(r.is_error)
                    self.assertIn("--require-gpu", r.content[0].text)

                base = q["workspace_version"]
                f = await self.call(s, "fork_version", {
                    "workspace": ws, "base": base, "label": "edit",
                    "files": {"notes.txt": "a new file\nof two lines\n"}})
                self.assertNotEqual(f["id"], base)
                # A fork carrying an agent's region file: its queries plan on the derived region.
                regions = Path(ws) / "fork_regions.yaml"
                regions.write_text("regions:\n  - refine: mainloop\n    regions:\n"
                                   "      - {name: wait, select: op:mbarrier_wait}\n")
                rf = await self.call(s, "fork_version", {
                    "workspace": ws, "base": base, "regions_file": str(regions)})
                p = await self.call(s, "plan_query", {
                    "program": rf["id"], "workspace": ws, "kernel": "tma_gemm",
                    "region": "mainloop/wait", "signals": ["duration"]})
                self.assertGreater(p["task_count"], 0)
                # compare_versions needs both versions' traces: here (no GPU) the engine's reason.
                c = await s.call_tool("compare_versions", {
                    "workspace": ws, "a": base, "b": rf["id"], "kernel": "tma_gemm",
                    "region": "mainloop"})
                self.assertTrue(c.is_error)
                self.assertIn("duration was not answered", c.content[0].text)
                a = await self.call(s, "fetch_artifact", {"workspace": ws,
                                                          "artifact": f"{f['id']}:notes.txt"})
                self.assertEqual(a["text"], "a new file\nof two lines\n")
                self.assertFalse(a["truncated"])
                a = await self.call(s, "fetch_artifact", {"workspace": ws, "max_bytes": 10,
                                                          "artifact": f"{base}:argus.yaml"})
                self.assertTrue(a["truncated"])
                self.assertEqual(a["returned_bytes"], 10)
                self.assertEqual(a["total_bytes"], SPEC.stat().st_size)
                self.assertIn("offset=10", a["note"])
                missing = await s.call_tool("fetch_artifact", {"workspace": ws,
                                                               "artifact": f"{base}:nope.cu"})
                self.assertTrue(missing.is_error)
                self.assertIn("has no file `nope.cu`", missing.content[0].text)

    async def test_summarize_trace_of_a_proton_trace_and_bad_traces(self):
        proton = DATA / "proton" / "matmul_tma_proton.chrome_trace"  # the H200's (README there)
        async with self.session() as s:
            t = await self.call(s, "summarize_trace", {"trace": str(proton), "top_k": 1})
            self.assertEqual((t["tool"], t["kernel"], t["unit"]),
                             ("proton", "matmul_tma_proton", "cycles"))
            self.assertEqual((t["launches"], t["occurrences"], t["dropped"]), (1, 512, 0))
            self.assertEqual((t["region_count"], t["omitted_regions"]), (2, 1))
            (r,) = t["regions"]
            self.assertEqual((r["path"], r["count"], r["median"]), ("mainloop", 256, 6167.5))
            self.assertAlmostEqual(r["share"], 0.807, places=3)
            self.assertGreaterEqual(r["slowest_sm_median"], r["median"])
            self.assertLessEqual(r["fastest_sm_median"], r["median"])
            t = await self.call(s, "summarize_trace", {"trace": str(proton),
                                                       "region": "epilogue"})
            self.assertEqual([r["path"] for r in t["regions"]], ["epilogue"])

            missing = await s.call_tool("summarize_trace", {"trace": str(DATA / "nope")})
            self.assertTrue(missing.is_error)
            self.assertIn("does not exist", missing.content[0].text)
            with tempfile.TemporaryDirectory() as d:  # a directory without a trace map
                r = await s.call_tool("summarize_trace", {"trace": d})
                self.assertTrue(r.is_error)
                self.assertIn("trace_map.json", r.content[0].text)
                self.assertNotIn("Traceback", r.content[0].text)
            r = await s.call_tool("summarize_trace", {"trace": str(proton), "trace_map": "m"})
            self.assertTrue(r.is_error)
            self.assertIn("Proton trace", r.content[0].text)

    async def test_engine_errors_are_tool_errors_with_its_message(self):
        async with self.session() as s:
            r = await s.call_tool("list_kernels", {"target": str(PTX / "derive_loops.ptx"),
                                                   "derive": ["op:wgmma"]})
            self.assertTrue(r.is_error)
            text = r.content[0].text
            self.assertIn("no wgmma instruction", text)  # what is wrong
            self.assertIn("bar_sync", text)  # and what exists instead
            self.assertNotIn("Traceback", text)
            self.assertTrue(text.startswith("regions: --derive op:wgmma: "), text)  # verbatim

            r = await s.call_tool("plan_query", {"program": str(SPEC), "kernel": "tma_gemm",
                                                 "region": "no_such_region",
                                                 "signals": ["duration"]})
            self.assertTrue(r.is_error)
            self.assertIn("no_such_region", r.content[0].text)
            self.assertIn("mainloop", r.content[0].text)

            r = await s.call_tool("plan_query", {"program": str(SPEC), "signals": []})
            self.assertTrue(r.is_error)  # the input schema refuses it
            self.assertNotIn("Traceback", r.content[0].text)


class Summaries(unittest.TestCase):
    """The bounded summaries, on a report the H200 produced (tests/data/reports)."""

    def setUp(self):
        if ClientSession is None:
            self.skipTest("the mcp package is not installed in this interpreter")

    def test_duration_top_k_by_total_time(self):
        from argus.mcp import summarize_report
        raw = json.loads((DATA / "reports" / "tma_gemm_duration" / "expected.json").read_text())
        s = summarize_report(raw, top_k=2)
        (d,) = s.signals
        self.assertEqual(d.status, "succeeded")
        self.assertEqual(d.region_count, 3)
        self.assertEqual([r.path for r in d.top_regions][0], "mainloop")
        self.assertEqual(len(d.top_regions), 2)
        self.assertEqual(d.top_regions[0].count, 320)
        self.assertEqual(d.top_regions[0].median, 288.0)
        self.assertEqual(d.provenance["artifacts"], ["a24", "a25"])
        self.assertEqual(d.value_shape["regions"], "list of 3")
        # Bounded: the by-iteration/role/SM breakdowns stay out.
        self.assertLess(len(s.model_dump_json()), len(json.dumps(raw)) // 2)

    def test_trace_summary_per_role_and_iteration(self):
        # A trace document has the shape of a duration answer's value: the H200's TMA GEMM one.
        from argus.mcp import summarize_trace_document
        raw = json.loads((DATA / "reports" / "tma_gemm_duration" / "expected.json").read_text())
        doc = {"duration": raw["signals"]["duration"]["value"]}
        t = summarize_trace_document(doc, "t", top_k=10, max_iterations=3)
        self.assertEqual((t.tool, t.unit, t.occurrences, t.region_count), ("argus", "ns", 640, 3))
        main = t.regions[0]
        self.assertEqual((main.path, main.count), ("mainloop", 320))
        self.assertEqual(main.roles, {"consumer": 288.0, "producer": 256.0})
        self.assertEqual(list(main.iterations), ["0", "1", "2"])
        self.assertEqual(main.iterations["0"], 672.0)
        self.assertEqual(main.iteration_count, 8)
        self.assertEqual(main.share, 1.0)  # the only top-level region
        self.assertLess(len(t.model_dump_json()), len(json.dumps(doc)) // 2)

    def test_large_values_are_summarized_by_shape(self):
        from argus.mcp import summarize_report
        raw = json.loads((DATA / "reports" / "tma_gemm_op_latency" / "expected.json").read_text())
        s = summarize_report(raw)
        self.assertEqual(s.signals[0].value_shape["ops"], "list of 48")
        self.assertLess(len(s.model_dump_json()), 4000)

    def test_region_file_yaml(self):
        from argus.mcp import RegionSpec, region_file_text
        text = region_file_text([RegionSpec(name="k", select="loop:gemm.cu:42", children=[
            RegionSpec(select="op:wgmma")])], kernel="gemm", derive=["ops"])
        self.assertEqual(text, 'argus_regions: 1\nkernel: "gemm"\nderive:\n  - "ops"\n'
                               'regions:\n  - name: "k"\n    select: "loop:gemm.cu:42"\n'
                               '    regions:\n      - select: "op:wgmma"\n')


if __name__ == "__main__":
    unittest.main()

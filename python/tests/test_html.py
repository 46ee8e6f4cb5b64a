"""argus.html: the stored H200 reports (tests/data/reports, README there says how each was
captured) as self-contained HTML pages, checked as markup and, where Chromium is installed
(scripts/setup.sh --all installs it), rendered headless and read back from the DOM."""

import json
import re
import shutil
import subprocess
import tempfile
import unittest
from html.parser import HTMLParser
from pathlib import Path

from argus import html as report_html
from trace_fixtures import proton_timeline

ROOT = Path(__file__).resolve().parents[2]
REPORTS = ROOT / "tests" / "data" / "reports"
VOID = {"meta", "br", "img", "input", "link", "hr"}


class Balanced(HTMLParser):
    """Every element closes, in order; collects what the checks look at."""

    def __init__(self):
        super().__init__()
        self.stack, self.tags, self.text, self.refs = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.refs += [v for k, v in attrs if k in ("src", "href") and v]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            raise AssertionError(f"</{tag}> closes nothing open")

    def handle_data(self, data):
        self.text.append(data)


def report(case):
    return json.loads((REPORTS / case / "expected.json").read_text())


def parse(page):
    p = Balanced()
    p.feed(page)
    p.close()
    assert not p.stack, f"unclosed: {p.stack}"
    return p


class HtmlReport(unittest.TestCase):
    def test_every_stored_report_renders_self_contained(self):
        cases = sorted(d.name for d in REPORTS.iterdir() if (d / "expected.json").exists())
        self.assertGreater(len(cases), 10)
        for case in cases:
            with self.subTest(case):
                page = report_html.render(report(case))
                p = parse(page)
                self.assertEqual(p.refs, [], "nothing is fetched at view time")
                self.assertNotIn("<script", page)
                self.assertIsNone(re.search(r"https?://(?!www\.w3\.org)", page))
                for name, s in report(case)["signals"].items():
                    self.assertIn(name, page)
                    if s.get("qualification"):
                        self.assertIn(f'class="q {s["qualification"]}"', page)

    def test_duration_is_the_region_tree_with_bars_and_iterations(self):
        r = report("tma_gemm_duration")
        page = report_html.render(r)
        p = parse(page)
        text = " ".join(p.text)
        for path in ("mainloop", "tma_load", "mma"):
            self.assertIn(path, text)
        self.assertGreaterEqual(p.tags.count("svg"), 4)  # a bar per region, iteration chart
        self.assertIn("median per iteration (0..7)", text)
        self.assertIn("provenance", text)

    def test_attributed_and_probes_say_their_ambiguity_and_method(self):
        page = report_html.render(report("pc_inst_mix"))
        self.assertIn("ambiguous", page)
        self.assertIn("ownership:", page)
        page = report_html.render(report("tma_gemm_op_latency"))
        self.assertIn("312c7c1477af4fae:tma_load:0", page)
        self.assertIn("mbarrier_state", page)

    def test_the_timeline_has_a_row_per_warp(self):
        trace = proton_timeline()
        page = report_html.render(report("proton_duration"), trace)
        parse(page)
        timeline = page.split('class="timeline">', 1)[1].split("</svg>", 1)[0]
        warps = {(e["args"]["sm"], e["args"]["cta"], e["args"]["warp"])
                 for e in trace["traceEvents"] if e.get("ph") == "X"}
        self.assertEqual(timeline.count("<text"), min(len(warps), 48))
        self.assertIn(f"{len(warps) - 48} more warps not drawn", page)

    def test_a_report_of_another_schema_is_refused(self):
        with self.assertRaises(report_html.ReportError) as e:
            report_html.render({"schema": "argus.report/9"})
        self.assertIn("argus.report/1", str(e.exception))
        with self.assertRaises(report_html.ReportError):
            report_html.render({"kernels": []})

    def test_the_command_says_what_failed_without_a_traceback(self):
        import contextlib
        import io
        with tempfile.TemporaryDirectory() as d:
            src = Path(d) / "report.json"
            src.write_text(json.dumps(report("tma_gemm_duration")))
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = report_html.main([str(src), "-o", str(Path(d) / "no" / "r.html")])
            self.assertEqual(code, 1)
            self.assertIn("cannot write", err.getvalue())
            self.assertNotIn("Traceback", err.getvalue())
            with contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(report_html.main([str(src), "-o", str(Path(d) / "r.html")]), 0)
            self.assertTrue((Path(d) / "r.html").read_text().startswith("<!DOCTYPE html>"))

    @unittest.skipIf(shutil.which("chromium") is None,
                     "Chromium is not installed (scripts/setup.sh --all installs it)")
    def test_chromium_renders_it(self):
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "report.html"
            out.write_text(report_html.render(report("tma_gemm_duration")))
            dom = subprocess.run(
                ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                 f"--user-data-dir={d}/profile", "--dump-dom", out.as_uri()],
                capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        self.assertEqual(dom.returncode, 0, dom.stderr[-2000:])
        self.assertIn('<table class="duration">', dom.stdout)
        table = dom.stdout.split('<table class="duration">', 1)[1].split("</table>", 1)[0]
        regions = report("tma_gemm_duration")["signals"]["duration"]["value"]["regions"]
        self.assertEqual(table.count("<tr>"), 1 + len(regions))  # the header and one per region
        self.assertIn("mainloop", dom.stdout)
        self.assertIn("<svg", dom.stdout)


if __name__ == "__main__":
    unittest.main()

"""A real region timeline for the timeline tests: the H200 Proton trace of the Triton TMA matmul
(tests/data/proton/README.md), imported by `argus trace --proton --chrome-trace` as Argus's
Chrome timeline."""

import json
import subprocess
import tempfile
from pathlib import Path

import argus

ROOT = Path(__file__).resolve().parents[2]


def proton_timeline() -> dict:
    with tempfile.TemporaryDirectory() as d:
        chrome = Path(d) / "trace.json"
        subprocess.run([argus.engine(), "trace", "--proton",
                        str(ROOT / "tests/data/proton/matmul_tma_proton.chrome_trace"),
                        "--chrome-trace", str(chrome)], check=True, capture_output=True,
                       stdin=subprocess.DEVNULL)
        return json.loads(chrome.read_text())

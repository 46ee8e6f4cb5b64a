#!/usr/bin/env python3
"""scripts/gpu/capture-report-case.py on workspaces made without a GPU.

    capture_test.py ARGUS GOLDEN_TESTS SOURCE_DIR

1. A committed case (pc_inst_executed: pc_attribution after ownership_weights) is run through
   the scheduler into a workspace (GOLDEN_TESTS --make-workspace); the script captures it back.
   The captured descriptor must equal the case's, its input files must hold the bytes the case's
   files give (the upstream mapping run as a file), and the harness must make the same report
   (the committed expected.json stands in for the query's `--json` output).
2. `argus trace --proton FILE --workspace W` (a Proton import: artifacts, no task); the captured
   `function: occurrence_timing` case must make the committed proton_duration case's value.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        sys.exit(f"FAILED: {' '.join(map(str, cmd))}\n{done.stdout}\n{done.stderr}")
    return done.stdout


def value_of(case_dir, signal):
    doc = json.loads((case_dir / "expected.json").read_text())
    return doc["signals"][signal]["value"]


def expect(cond, message):
    if not cond:
        sys.exit(f"FAILED: {message}")


def main():
    argus, golden, source = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    script = source / "scripts" / "gpu" / "capture-report-case.py"
    reports = source / "tests" / "data" / "reports"
    env = dict(os.environ, ARGUS_BIN=argus)
    with tempfile.TemporaryDirectory(prefix="argus-capture-test-") as tmp:
        tmp = Path(tmp)
        cases = tmp / "cases"

        # 1. A replayed case.
        original = reports / "pc_inst_executed"
        spec = json.loads((original / "case.json").read_text())
        run([golden, "--make-workspace", str(original), str(tmp / "ws1")])
        captured = cases / "pc_inst_executed"
        # The committed report as the query's --json output: the captured case gets its fields.
        run([sys.executable, str(script), str(tmp / "ws1"), "inst_executed", str(captured),
             "--report", str(original / "expected.json")], env=env)
        got = json.loads((captured / "case.json").read_text())
        want_task = dict(spec["task"])
        for key, value in got["task"].items():
            if key in want_task:
                expect(value == want_task[key], f"descriptor field {key}: {value} != "
                                                f"{want_task[key]}")
        for name, ref in spec["inputs"].items():
            expect(name in got["inputs"], f"input {name} not captured")
            if ref.startswith("data:"):
                want = (source / "tests" / "data" / ref[5:]).read_bytes()
                expect((captured / got["inputs"][name]).read_bytes() == want,
                       f"input {name}: captured bytes differ from {ref}")

        # 2. A Proton import.
        trace = source / "tests" / "data" / "proton" / "matmul_tma_proton.chrome_trace"
        run([argus, "trace", "--proton", str(trace), "--workspace", str(tmp / "ws2")])
        run([sys.executable, str(script), str(tmp / "ws2"), "duration",
             str(cases / "proton_duration")], env=env)

        # The harness on the captured cases: the same values as the committed cases'.
        run([golden], env=dict(env, ARGUS_REPORT_CASES=str(cases), ARGUS_UPDATE_GOLDEN="1"))
        run([golden], env=dict(env, ARGUS_REPORT_CASES=str(cases)))
        for name, signal in (("pc_inst_executed", "inst_executed"),
                             ("proton_duration", "duration")):
            expect(value_of(cases / name, signal) == value_of(reports / name, signal),
                   f"{name}: the captured case's {signal} differs from the committed one")
        # With the report's fields, the whole report is the committed one.
        for name in ("expected.json", "expected.txt"):
            expect((captured / name).read_text() == (original / name).read_text(),
                   f"pc_inst_executed: the captured case's {name} differs from the committed one")
        shutil.rmtree(cases)
    print("capture-report-case.py: replayed and Proton workspaces captured back to the same "
          "values")


if __name__ == "__main__":
    main()

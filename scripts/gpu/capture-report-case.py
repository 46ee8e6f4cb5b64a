#!/usr/bin/env python3
"""Writes a golden report case (tests/data/reports/README.md) from a workspace.

    scripts/gpu/capture-report-case.py WORKSPACE SIGNAL OUTDIR [--report REPORT.json] [--task tN]

After an `argus query` made SIGNAL in WORKSPACE, this finds the task that made it (the one the
report's provenance names with --report, else the newest succeeded task with an output SIGNAL)
and writes OUTDIR/case.json with the task's descriptor, OUTDIR/inputs/ with the artifacts its
input bindings name and OUTDIR/evidence/ with what the executor reads from its evidence: the
outputs of its ordering-only dependencies and, for probe_join, each probe branch's `probe`
description and `region_trace` bundle. With --report (the query's `argus query --json`), the
report's query, versions, kernel, region and run summary go into case.json too; without it they
are placeholders. A workspace with no such task but a Proton import (`argus trace --proton FILE
--workspace W`) gives a `function: occurrence_timing` case on the imported trace.

Then `ARGUS_UPDATE_GOLDEN=1 build/tests/report_golden/argus_report_golden_tests` writes its
expected.json and expected.txt. The argus binary is $ARGUS_BIN, else build/argus of this tree.
Python 3, standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def argus_bin():
    return os.environ.get("ARGUS_BIN") or str(ROOT / "build" / "argus")


class Workspace:
    def __init__(self, directory):
        self.dir = str(directory)
        self._tasks = {}
        self._artifacts = {}
        self.listing = self._json("list")

    def _run(self, *args):
        cmd = [argus_bin(), "ws", *args, "--workspace", self.dir]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"capture-report-case: {' '.join(cmd)} failed:\n{done.stderr}")
        return done.stdout

    def _json(self, *args):
        return json.loads(self._run(*args, "--json"))

    def task(self, tid):
        if tid not in self._tasks:
            self._tasks[tid] = self._json("show", tid)["task"]
        return self._tasks[tid]

    def artifact(self, aid):
        if aid not in self._artifacts:
            self._artifacts[aid] = self._json("show", aid)["provenance"]["artifact"]
        return self._artifacts[aid]

    def cat(self, aid, path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._run("cat", aid, "-o", str(path))

    def succeeded(self):
        """Succeeded tasks of the listing, oldest first."""
        tasks = [t for t in self.listing["tasks"] if t["status"] == "succeeded"]
        return sorted(tasks, key=lambda t: int(t["id"][1:]))

    def output(self, tid, name):
        """The artifact id of task tid's output `name`, or None."""
        for a in self.task(tid)["outputs"]:
            if a["name"] == name:
                return a["id"]
        return None


def descriptor_of(task):
    d = task["descriptor"]
    return d if isinstance(d, dict) else json.loads(d)


def safe_name(text):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "artifact"


def find_signal_task(ws, signal, report, wanted):
    if wanted:
        return ws.task(wanted)
    if report:
        prov = report.get("signals", {}).get(signal, {}).get("provenance", {})
        if "task" in prov:
            return ws.task(prov["task"])
    made = [t for t in ws.succeeded() if signal in descriptor_of(t).get("outputs", [])]
    return ws.task(made[-1]["id"]) if made else None


def producer(ws, task_id, output, before, recorded):
    """The artifact of `task_id`'s output `output` that the consumer read: one of the consumer's
    recorded inputs when it recorded them, else that task's newest success before it."""
    for aid in recorded:
        a = ws.artifact(aid)
        if a["name"] == output and a["task"] and descriptor_of(ws.task(a["task"]))["id"] == task_id:
            return aid, "recorded input of the task"
    for t in reversed(ws.succeeded()):
        if int(t["id"][1:]) >= before or descriptor_of(t)["id"] != task_id:
            continue
        aid = ws.output(t["id"], output)
        if aid:
            return aid, f"newest success of `{task_id}` before the task ({t['id']})"
    return None, None


def newest_task(ws, task_id, before):
    for t in reversed(ws.succeeded()):
        if int(t["id"][1:]) < before and descriptor_of(t)["id"] == task_id:
            return t["id"]
    return None


def capture_task(ws, task, signal, out, report):
    d = descriptor_of(task)
    before = int(task["id"][1:])
    recorded = task.get("inputs", [])
    inputs, evidence, sources = {}, {}, {}
    input_producers = set()
    for b in d.get("inputs", []):
        aid, how = producer(ws, b["task"], b["output"], before, recorded)
        if aid is None:
            sys.exit(f"capture-report-case: no artifact of `{b['task']}/{b['output']}` "
                     f"(input `{b['name']}` of {task['id']}) in {ws.dir}")
        rel = f"inputs/{safe_name(b['name'])}"
        ws.cat(aid, out / rel)
        inputs[b["name"]] = rel
        sources[rel] = {"artifact": aid, "hash": ws.artifact(aid)["hash"],
                        "of": f"{b['task']}/{b['output']}", "found_as": how}
        input_producers.add(b["task"])

    def add_evidence(key, aid, how):
        rel = f"evidence/{safe_name(key)}"
        ws.cat(aid, out / rel)
        evidence[key] = rel
        sources[rel] = {"artifact": aid, "hash": ws.artifact(aid)["hash"], "of": key,
                        "found_as": how}

    # The scheduler's evidence: every output of each upstream task that binds no input.
    for dep in d.get("dependencies", []):
        if dep in input_producers:
            continue
        tid = newest_task(ws, dep, before)
        if tid is None:
            sys.exit(f"capture-report-case: dependency `{dep}` of {task['id']} never succeeded")
        for a in ws.task(tid)["outputs"]:
            add_evidence(f"{dep}/{a['name']}", a["id"], f"output of dependency {tid}")
    # probe_join reads each probe branch's description and trace (discovery adds the branches).
    if d.get("executor") == "probe_join":
        sites_name = next((n for n in inputs if n.endswith(".op_sites")), None)
        sites = json.loads((out / inputs[sites_name]).read_text()) if sites_name else {}
        for probe in sites.get("probes", []):
            if not probe.get("collect"):
                continue
            for key in (f"{probe.get('variant', '')}/probe", f"{probe['collect']}/region_trace"):
                task_id, output = key.rsplit("/", 1)
                tid = newest_task(ws, task_id, before)
                aid = ws.output(tid, output) if tid else None
                if aid:
                    add_evidence(key, aid, f"probe branch {tid}")
                else:
                    print(f"capture-report-case: no {key} in the workspace (the join lists the "
                          "probe as failed)", file=sys.stderr)

    case = {
        "description": f"{signal} of `{d['id']}` ({d.get('executor', '')}), captured from a "
                       "workspace by scripts/gpu/capture-report-case.py",
        "signal": signal,
        "evidence_source": {
            "workspace_task": task["id"],
            "memo_key": task.get("memo_key", ""),
            "files": sources,
        },
        "task": d,
        "inputs": inputs,
        "evidence": evidence,
        "report": report_fields(report, signal, d),
    }
    return case


def report_fields(report, signal, d):
    fields = {}
    if report:
        for key in ("query", "program_version", "workspace_version", "kernel", "region",
                    "region_id"):
            if key in report:
                fields[key] = report[key]
        entry = report.get("signals", {}).get(signal, {})
        if "status" in entry:
            fields["status"] = entry["status"]
        if "provenance" in entry:
            prov = dict(entry["provenance"])
            if "workspace" in prov:
                prov["workspace"] = "ws"  # a path of the machine that ran the query
            fields["provenance"] = prov
        run = report.get("run", {})
        fields["run"] = {"planned": run.get("planned", 1), "ran": run.get("tasks", 1),
                         "executed": run.get("executed", 1), "devices": run.get("devices", [])}
    else:
        fields["query"] = {"program": "", "region": d.get("region", ""),
                           "scope": d.get("scope", ""), "signals": [signal]}
        fields["region"] = d.get("region", "")
    fields["workspace"] = "ws"
    return fields


def capture_proton(ws, signal, out):
    """A Proton import: its trace artifact replayed through occurrence_timing."""
    count = ws.listing.get("artifacts", {}).get("count", 0)
    trace, timing = None, None
    for n in range(1, count + 1):
        a = ws.artifact(f"a{n}")
        if a["kind"] == "proton_trace":
            trace = a
        elif a["kind"] == "region_timing" and a["name"].startswith("proton:"):
            timing = a
    if trace is None or timing is None or signal not in ("duration", "occurrences"):
        return None
    kernel = timing["name"][len("proton:"):]
    rel = f"inputs/{safe_name(trace['name'])}"
    ws.cat(trace["id"], out / rel)
    return {
        "description": f"{signal} of a Proton trace of `{kernel}` imported by `argus trace "
                       "--proton --workspace`, captured by scripts/gpu/capture-report-case.py",
        "signal": signal,
        "function": "occurrence_timing",
        "evidence_source": {"files": {rel: {"artifact": trace["id"], "hash": trace["hash"]}},
                            "region_timing": timing["id"]},
        "task": {"id": f"proton:{kernel}", "region": "", "scope": timing["scope"],
                 "config": {"kernel": kernel}},
        "inputs": {"proton_trace": rel},
        "report": {"query": {"program": trace["name"], "signals": [signal]}, "kernel": kernel,
                   "qualification": "observed", "unit": "cycles" if signal == "duration"
                   else "count", "workspace": "ws"},
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    p.add_argument("workspace")
    p.add_argument("signal")
    p.add_argument("outdir")
    p.add_argument("--report", help="the query's `argus query --json` output")
    p.add_argument("--task", help="the workspace task (tN) that made the signal")
    a = p.parse_args()
    report = json.loads(Path(a.report).read_text()) if a.report else None
    ws = Workspace(a.workspace)
    out = Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    task = find_signal_task(ws, a.signal, report, a.task)
    case = capture_task(ws, task, a.signal, out, report) if task else None
    if case is None:
        case = capture_proton(ws, a.signal, out)
    if case is None:
        sys.exit(f"capture-report-case: no task in {a.workspace} made `{a.signal}`")
    (out / "case.json").write_text(json.dumps(case, indent=2) + "\n")
    for f in sorted(out.rglob("*")):
        if f.is_file() and f.stat().st_size > (1 << 20):
            print(f"capture-report-case: {f} is {f.stat().st_size >> 20} MiB; a smaller query "
                  "(scope, fewer launches) keeps the repository small", file=sys.stderr)
    print(f"wrote {out}/case.json; `ARGUS_UPDATE_GOLDEN=1 "
          "build/tests/report_golden/argus_report_golden_tests` writes its expected files")


if __name__ == "__main__":
    main()

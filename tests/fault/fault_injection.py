#!/usr/bin/env python3
"""Fault injection on the workspace and the runtime, through the argus binary, CPU only.

Queries run without a GPU (ARGUS_DEVICES=""): Argus still makes the program version, the PTX,
the trace variant and its nvcc build, and publishes them, which is the writing a fault can hit.

  fault_injection.py kill       ARGUS SOURCE_DIR   kill -9 at random points of queries and of
                                                   writing ws verbs (20+ kills)
  fault_injection.py disk_full  ARGUS SOURCE_DIR   the workspace on a 2 MiB tmpfs
  fault_injection.py read_only  ARGUS SOURCE_DIR   the workspace on a read-only bind mount
  fault_injection.py concurrent ARGUS SOURCE_DIR   two identical queries at once

After every fault: the workspace opens, `argus ws check` finds no damage (only stale state of
dead processes, which `--repair` repairs), no task stays unfinished, a task that did not succeed
published nothing, and no temporary folder of a dead process outlives the next run.
Exit 0: passed; 1: failed (each failure printed); 77: skipped (the reason printed).
"""

import json
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
FAILURES = []


def fail(message):
    FAILURES.append(message)
    print(f"FAIL: {message}", flush=True)


class Argus:
    def __init__(self, binary, source, root):
        self.binary = binary
        self.source = pathlib.Path(source)
        self.root = pathlib.Path(root)
        self.tmp = self.root / "tmp"  # TMPDIR of every argus started here
        self.tmp.mkdir()
        self.env = dict(os.environ, ARGUS_DEVICES="", TMPDIR=str(self.tmp))
        # A private copy of the examples' layout, so that each trial's program has new content
        # (its PTX names its own path) and nothing is written into the source tree.
        self.examples = self.root / "examples"
        self.examples.mkdir()
        (self.root / "include").symlink_to(self.source / "include")
        (self.examples / "common").symlink_to(self.source / "examples" / "common")
        self.copies = 0
        self.mounts = []  # unmounted at the end
        self.sessions = []  # process groups of the argus started in the background

    def program(self, example):
        """A fresh copy of examples/EXAMPLE; its spec path."""
        self.copies += 1
        target = self.examples / f"{example}_{self.copies}"
        shutil.copytree(self.source / "examples" / example, target,
                        ignore=shutil.ignore_patterns(".argus", "build*"))
        return target / "argus.yaml"

    def start(self, *args):
        # Its own session, so that the test can wait for the children a killed argus leaves
        # running (kill -9 kills argus alone, as it would in use).
        p = subprocess.Popen([self.binary, *args], env=self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.sessions.append(p.pid)
        return p

    def wait_for_orphans(self, limit=120):
        """Waits until no process of a started session is left (nvcc a killed argus left)."""
        deadline = time.monotonic() + limit
        for pgid in self.sessions:
            while time.monotonic() < deadline:
                try:
                    os.killpg(pgid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.2)

    def run(self, *args, timeout=600):
        return subprocess.run([self.binary, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def query(self, spec, ws, signals="duration"):
        region = "mainloop" if "tma_gemm" in str(spec) else "main"
        return ["query", "--program", str(spec), "--region", region, "--signals", signals,
                "--workspace", str(ws), "--json"]


def check_consistent(argus, ws, what, expect_stale_ok=True):
    """The workspace after a fault: no damage, stale state repaired, nothing half-published."""
    found = argus.run("ws", "check", "--workspace", str(ws), "--json")
    try:
        doc = json.loads(found.stdout)
    except json.JSONDecodeError:
        fail(f"{what}: `ws check` printed no JSON (exit {found.returncode}): {found.stderr}")
        return None
    if not doc["verify"]["ok"]:
        fail(f"{what}: `ws check` found damage: {doc['verify']['problems']}")
    stale = len(doc["recovery"]["stale_tasks"]) + len(doc["recovery"]["stale_folders"])
    if found.returncode != (0 if doc["ok"] else 1):
        fail(f"{what}: `ws check` exit {found.returncode} with ok={doc['ok']}")
    repaired = argus.run("ws", "check", "--repair", "--workspace", str(ws), "--json")
    rdoc = json.loads(repaired.stdout) if repaired.stdout.startswith("{") else None
    if repaired.returncode != 0 or not rdoc or not rdoc["ok"]:
        fail(f"{what}: `ws check --repair` left problems (exit {repaired.returncode}): "
             f"{rdoc and rdoc['problems']} {repaired.stderr}")
    again = argus.run("ws", "check", "--workspace", str(ws), "--json")
    if again.returncode != 0:
        fail(f"{what}: after --repair, `ws check` still says: {again.stderr}")
    listing = argus.run("ws", "list", "--workspace", str(ws), "--json")
    if listing.returncode != 0:
        fail(f"{what}: `ws list` fails: {listing.stderr}")
        return None
    ldoc = json.loads(listing.stdout)
    for task in ldoc["tasks"]:
        if task["status"] in ("queued", "running"):
            fail(f"{what}: task {task['id']} is still {task['status']} after --repair")
        if task["status"] != "succeeded" and task["outputs"]:
            fail(f"{what}: task {task['id']} ({task['status']}) published outputs "
                 f"{task['outputs']}")
        if task["status"] == "failed" and task["error"].startswith("abandoned"):
            if "ended without finishing it" not in task["error"]:
                fail(f"{what}: abandoned task {task['id']} says `{task['error']}`")
    owners = ws / "owners"
    left = sorted(p.name for p in owners.iterdir()) if owners.exists() else []
    if left:
        fail(f"{what}: {owners} still holds {left} with no argus running")
    return {"stale": stale, "listing": ldoc}


def temp_entries(argus):
    return sorted(p.name for p in argus.tmp.iterdir())


def dead_owner_entries(argus):
    """argus-* folders in TMPDIR; every one must belong to an owner whose lock is free."""
    entries = [name for name in temp_entries(argus) if not name.startswith("argus-owner-")]
    for name in entries:
        if name.startswith("argus-run-"):
            fail(f"{name} in TMPDIR: a run's folders belong in the workspace's scratch")
    return entries


def scenario_kill(argus):
    ws = argus.root / "ws"
    rng = random.Random(int(os.environ.get("ARGUS_FAULT_SEED", "2929")))
    examples = ["tma_gemm", "nested_regions"]
    # Calibrate: how long one fresh query takes here.
    start = time.monotonic()
    first = argus.run(*argus.query(argus.program("tma_gemm"), ws))
    full = time.monotonic() - start
    if first.returncode != 0:
        fail(f"the calibration query failed (exit {first.returncode}): {first.stderr[-2000:]}")
        return
    print(f"one fresh CPU-only query: {full:.1f} s", flush=True)
    kills = query_kills = trials = 0
    max_left = 0
    while (kills < 24 or query_kills < 16) and trials < 60:
        trials += 1
        verb = trials % 4 == 0
        if verb:
            # A writing ws verb: fork (a new version with a file) or gc.
            big = argus.root / f"edit_{trials}.cu"
            big.write_bytes(os.urandom(rng.randint(1, 3) << 20))
            args = (["ws", "fork", "v1", "--file", f"kernel_{trials}.cu={big}", "--workspace",
                     str(ws)] if trials % 8 else ["ws", "gc", "--workspace", str(ws)])
            delay = rng.uniform(0.0, 0.08)  # they take tens of milliseconds
        else:
            args = argus.query(argus.program(rng.choice(examples)), ws,
                               rng.choice(["duration", "inst_executed", "duration,inst_mix"]))
            delay = rng.uniform(0.05, full * 1.1)
        p = argus.start(*args)
        time.sleep(delay)
        killed = p.poll() is None
        if killed:
            p.send_signal(signal.SIGKILL)
        p.communicate()
        what = f"trial {trials} ({args[0]} {args[1]}, kill at {delay:.2f} s" + (
            ")" if killed else ", finished first)")
        if killed:
            kills += 1
            query_kills += 0 if verb else 1
        elif p.returncode != 0 and args[0] == "query":
            fail(f"{what}: the query failed by itself (exit {p.returncode})")
        left = dead_owner_entries(argus)
        max_left = max(max_left, len(left))
        result = check_consistent(argus, ws, what)
        if result is not None:
            print(f"{what}: consistent; stale state repaired: {result['stale']}; "
                  f"temp folders of dead processes: {len(left)}", flush=True)
    # The next run (a query to the end) removes what dead processes left in TMPDIR, once the
    # children they left running (still writing there) have ended.
    argus.wait_for_orphans()
    final = argus.run(*argus.query(argus.program("tma_gemm"), ws))
    if final.returncode != 0:
        fail(f"the query after the kills failed (exit {final.returncode}): {final.stderr[-2000:]}")
    check_consistent(argus, ws, "after the final query")
    left = temp_entries(argus)
    if left:
        fail(f"after the next run TMPDIR still holds {left}")
    print(f"{kills} kills ({query_kills} of queries) in {trials} trials; up to {max_left} temp "
          f"folders of dead processes at once, {len(left)} after the next run", flush=True)
    if kills < 20:
        fail(f"only {kills} of {trials} trials were killed before they finished")


def mount(*args):
    return subprocess.run(["mount", *args], capture_output=True, text=True)


def query_on_small_disk(argus, size):
    """A query whose workspace lies on a tmpfs of `size`; returns its workspace and result."""
    mnt = argus.root / f"small_{size}"
    mnt.mkdir()
    m = mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt))
    if m.returncode != 0:
        return None, m
    argus.mounts.append(mnt)
    ws = mnt / "ws"
    return ws, argus.run(*argus.query(argus.program("tma_gemm"), ws))


def scenario_disk_full(argus):
    # 256 KiB: the query's own outputs (PTX, variant, its build) do not fit.
    ws, q = query_on_small_disk(argus, "256k")
    if ws is None:
        print(f"skipped: cannot mount a tmpfs (needs root and mount rights): {q.stderr.strip()}")
        return SKIP
    # The error is the query's (stderr) or a task's (the report's failures, with --json).
    said = q.stderr
    if q.stdout.startswith("{"):
        said += "\n".join(f["error"] for f in json.loads(q.stdout).get("failures", []))
    print(f"query on a 256 KiB disk: exit {q.returncode}: {said.strip()[-600:]}", flush=True)
    if q.returncode == 0:
        fail("a query whose outputs do not fit on its disk succeeded")
    elif ("space" not in said and "full" not in said) or str(ws.parent) not in said:
        fail(f"the query on a full disk failed without naming the place and the cause: "
             f"{said[-1500:]}")
    if (ws / "argus.db").exists():
        check_consistent(argus, ws, "after the query on a 256 KiB disk")
    # 2 MiB: the query fits; then a fork with 3 MiB more does not.
    ws, q = query_on_small_disk(argus, "2m")
    if q.returncode != 0:
        fail(f"the query on a 2 MiB disk failed: {q.stderr[-1500:]}")
        return
    check_consistent(argus, ws, "after the query on a 2 MiB disk")
    before = json.loads(argus.run("ws", "list", "--workspace", str(ws), "--json").stdout)
    versions = [v["id"] for v in before["versions"]]
    big = argus.root / "big.cu"
    big.write_bytes(os.urandom(3 << 20))
    fork = argus.run("ws", "fork", versions[0], "--file", f"big.cu={big}", "--workspace", str(ws))
    if fork.returncode == 0:
        fail("a fork with 3 MiB more on a 2 MiB disk succeeded")
    elif "space" not in fork.stderr and "full" not in fork.stderr:
        fail(f"the fork on a full disk failed without saying so: {fork.stderr}")
    else:
        print(f"fork on a full disk: {fork.stderr.strip()}", flush=True)
    check_consistent(argus, ws, "after the fork on a full disk")
    after = json.loads(argus.run("ws", "list", "--workspace", str(ws), "--json").stdout)
    if [v["id"] for v in after["versions"]] != versions:
        fail("the failed fork changed the versions")
    # The failed fork left nothing that takes room: a small edit still fits.
    small = argus.root / "small.cu"
    small.write_text("// a small edit\n")
    ok = argus.run("ws", "fork", versions[0], "--file", f"small.cu={small}", "--workspace",
                   str(ws))
    if ok.returncode != 0:
        fail(f"a small fork after the failed one failed: {ok.stderr}")
    check_consistent(argus, ws, "after a small fork")


def scenario_read_only(argus):
    ws = argus.root / "ws"
    q = argus.run(*argus.query(argus.program("tma_gemm"), ws))
    if q.returncode != 0:
        fail(f"making the workspace failed: {q.stderr[-2000:]}")
        return
    view = argus.root / "ro"
    view.mkdir()
    m = mount("--bind", str(ws), str(view))
    if m.returncode != 0:
        print(f"skipped: cannot bind-mount (needs root and mount rights): {m.stderr.strip()}")
        return SKIP
    try:
        m = mount("-o", "remount,bind,ro", str(view))
        if m.returncode != 0:
            print(f"skipped: cannot remount read-only: {m.stderr.strip()}")
            return SKIP
        probe = view / "probe"
        try:
            probe.write_text("x")
            fail(f"{view} is writable after the read-only remount")
            return
        except OSError:
            pass
        files = sorted(str(p.relative_to(ws)) for p in ws.rglob("*"))
        for args in (["ws", "list"], ["ws", "list", "--json"], ["ws", "show", "v1"],
                     ["ws", "cat", "v1:argus.yaml"], ["ws", "check"], ["ws", "check", "--json"]):
            r = argus.run(*args, "--workspace", str(view))
            if r.returncode != 0:
                fail(f"`argus {' '.join(args)}` on a read-only workspace: exit {r.returncode}: "
                     f"{r.stderr}")
        for args in (["ws", "fork", "v1"], ["ws", "gc"], ["ws", "check", "--repair"],
                     argus.query(argus.program("tma_gemm"), view)):
            if "--workspace" not in args:
                args = [*args, "--workspace", str(view)]
            r = argus.run(*args)
            if r.returncode == 0:
                fail(f"`argus {' '.join(args[:2])}` wrote to a read-only workspace")
            elif str(view) not in r.stderr or "not writable" not in r.stderr:
                fail(f"`argus {' '.join(args[:2])}` on a read-only workspace: unclear error: "
                     f"{r.stderr}")
            else:
                print(f"argus {' '.join(args[:2])}: {r.stderr.strip()}", flush=True)
        if sorted(str(p.relative_to(ws)) for p in ws.rglob("*")) != files:
            fail("the read-only workspace changed")
    finally:
        subprocess.run(["umount", str(view)], capture_output=True)
    # Without the mount: a directory the user may not write (root bypasses modes, so as nobody).
    runuser = shutil.which("runuser")
    if runuser is None or os.geteuid() != 0:
        print("part skipped: no runuser (or not root) to read a chmod a-w workspace as nobody")
        return
    copy = pathlib.Path(tempfile.mkdtemp(prefix="argus-ro-", dir="/tmp"))
    try:
        shutil.copytree(ws, copy / "ws")
        subprocess.run(["chmod", "-R", "a-w,a+rX", str(copy)], check=True)
        os.chmod(copy, 0o555)
        probe = subprocess.run([runuser, "-u", "nobody", "--", argus.binary, "--help"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            print(f"part skipped: nobody cannot run {argus.binary}: {probe.stderr.strip()}")
            return
        r = subprocess.run([runuser, "-u", "nobody", "--", argus.binary, "ws", "list",
                            "--workspace", str(copy / "ws")], capture_output=True, text=True,
                           env=dict(argus.env, TMPDIR="/tmp"))
        if r.returncode != 0:
            fail(f"nobody cannot list a chmod a-w workspace: {r.stderr}")
        w = subprocess.run([runuser, "-u", "nobody", "--", argus.binary, "ws", "fork", "v1",
                            "--workspace", str(copy / "ws")], capture_output=True, text=True,
                           env=dict(argus.env, TMPDIR="/tmp"))
        if w.returncode == 0 or "not writable" not in w.stderr:
            fail(f"nobody's fork of a chmod a-w workspace: exit {w.returncode}: {w.stderr}")
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(copy)])
        shutil.rmtree(copy, ignore_errors=True)


def scenario_concurrent(argus):
    ws = argus.root / "ws"
    spec = argus.program("tma_gemm")
    procs = [argus.start(*argus.query(spec, ws)) for _ in range(2)]
    outs = [p.communicate() for p in procs]
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            fail(f"one of two identical queries at once failed (exit {p.returncode}): {err}")
    versions = [json.loads(out)["workspace_version"] for out, _ in outs if out.startswith("{")]
    if len(set(versions)) != 1:
        fail(f"two identical queries at once answered from different versions: {versions}")
    result = check_consistent(argus, ws, "after two identical queries at once")
    if result:
        roots = [v for v in result["listing"]["versions"]
                 if v["kind"] == "program" and v["base"] is None]
        if len(roots) != 1:
            fail(f"two identical queries at once made {len(roots)} program versions: "
                 f"{[v['id'] for v in roots]}")
        print(f"two identical queries at once: {len(roots)} program version, "
              f"{len(result['listing']['versions'])} versions in all", flush=True)


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    scenario, binary, source = sys.argv[1:]
    root = pathlib.Path(tempfile.mkdtemp(prefix="argus-fault-"))
    try:
        argus = Argus(binary, source, root)
        outcome = {"kill": scenario_kill, "disk_full": scenario_disk_full,
                   "read_only": scenario_read_only,
                   "concurrent": scenario_concurrent}[scenario](argus)
        if outcome == SKIP:
            return SKIP
    finally:
        for mnt in [*argus.mounts, root / "ro"]:
            subprocess.run(["umount", "-q", str(mnt)], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

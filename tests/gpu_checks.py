"""Shared start and verdict of the Python GPU tests (tests/gpu_*/): skip without a GPU, run
`argus query --json`, record named checks, exit 1 when any failed."""
import json
import shutil
import subprocess
import sys

failures = []


def require_gpu():
    """Exits 77 (ctest's skip code for these tests) when nvidia-smi lists no GPU."""
    if shutil.which("nvidia-smi") is None or \
            subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode != 0:
        print("SKIP: no CUDA device (nvidia-smi lists none)")
        sys.exit(77)


def require_torch_triton():
    """Exits 77 (skip) when torch and triton are not importable by this interpreter."""
    if subprocess.run([sys.executable, "-c", "import torch, triton"],
                      capture_output=True).returncode:
        print("SKIP: torch and triton are not importable")
        sys.exit(77)


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def argus_query(argus, workspace, *args, timeout=900):
    """The report of `argus query --json --workspace WORKSPACE ARGS...`; exits with the engine's
    output when the query fails."""
    cmd = [argus, "query", "--json", "--workspace", workspace, *args]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        try:  # the report's failures, which the JSON's tail need not hold
            report = json.loads(run.stdout)
            print(json.dumps(report.get("failures", []), indent=1)[:4000])
            for name, signal in report.get("signals", {}).items():
                value = signal.get("value") if isinstance(signal.get("value"), dict) else {}
                print(name, signal.get("status"), signal.get("error", ""),
                      json.dumps(value.get("failed", []))[:2000])
        except ValueError:
            print(run.stdout[-4000:])
        print(run.stderr[-4000:])
        raise SystemExit(f"argus query failed ({run.returncode}): {' '.join(cmd)}")
    return json.loads(run.stdout)

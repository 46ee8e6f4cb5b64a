"""Shared start and verdict of the Python GPU tests (tests/gpu_*/): skip without a GPU, record
named checks, exit 1 when any failed."""
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


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)

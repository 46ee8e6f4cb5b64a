"""The preamble shared by the scripts that launch a PyPI package's Triton kernel
(``examples/triton_packages/*/run.py``): skip where a kernel cannot run, take ``--reps``, say
which versions ran.

    from argus import package_script

    torch, triton = package_script.require_cuda()
    package_script.require_package("liger_kernel", "pip install liger-kernel==0.8.5")

    def main():
        reps = package_script.parse_reps(__doc__)
        package_script.print_versions("liger-kernel")

A skip is exit 77 (the specs' ``skip_exit_code``) with ``run.py: REASON`` on stderr; the
``require_*`` calls belong at the top of the script, before its package imports, so a machine
without a GPU or the package skips rather than fails. Nothing here imports torch before
``require_cuda``, so importing this module is safe anywhere.
"""

import argparse
import importlib.metadata
import importlib.util
import sys

from .jit_source import package_file

#: The exit code of a skipped script: the examples' specs give it as ``run.skip_exit_code``.
SKIP_EXIT_CODE = 77


def skip(reason):
    """Ends the script as skipped: ``run.py: REASON`` on stderr, exit 77."""
    print(f"run.py: {reason}", file=sys.stderr)
    sys.exit(SKIP_EXIT_CODE)


def dist_version(dist):
    """The installed version of distribution ``dist``, or a note saying it has no metadata
    (a package put on ``PYTHONPATH`` rather than installed)."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (no distribution metadata)"


def require_cuda():
    """The ``torch`` and ``triton`` modules; skips when either is missing or torch sees no CUDA
    device."""
    try:
        import torch
        import triton
    except ImportError as e:
        skip(f"{e}; needs torch and triton")
    if not torch.cuda.is_available():
        skip("no CUDA device")
    return torch, triton


def require_package(package, install, relpath=None):
    """Skips unless the top-level ``package`` is installed, saying ``install`` (the command that
    installs it). With ``relpath``, returns that file's path inside the package
    (``jit_source.package_file``); the package's code is not executed either way."""
    if relpath is None:
        found = importlib.util.find_spec(package) is not None
        path = None
    else:
        path = package_file(package, relpath)
        found = path is not None
    if not found:
        skip(f"{package} is not installed ({install})")
    return path


def parse_reps(doc):
    """``--reps N`` from the command line (default 1; at least 1, else a usage error, exit 2);
    ``doc``'s first line is the ``--help`` description."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1, help="kernel launches (default 1)")
    reps = ap.parse_args().reps
    if reps < 1:
        ap.error("--reps must be at least 1")
    return reps


def print_versions(dist, kernel_file=None):
    """Prints ``DIST VERSION, triton V, torch V, GPU NAME`` (and ``; kernel from FILE``) on
    stdout, so a run's log says what ran. Call after ``require_cuda``."""
    import torch
    import triton

    line = (f"{dist} {dist_version(dist)}, triton {triton.__version__}, "
            f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    if kernel_file is not None:
        line += f"; kernel from {kernel_file}"
    print(line)

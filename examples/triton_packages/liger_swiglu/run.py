#!/usr/bin/env python3
"""Runs liger-kernel's SwiGLU forward kernel, unmodified: ``_swiglu_forward_kernel`` of the
installed ``liger_kernel/ops/swiglu.py`` (liger-kernel 0.8.5; it calls the file's jit helper
``silu``), launched by the package's own ``liger_kernel.ops.swiglu.swiglu_forward`` for
Llama-3-8B's intermediate size 14336, bf16: ``n_cols`` is a constexpr 14336, and
``calculate_settings`` gives BLOCK_SIZE 16384 and num_warps 16 (on Blackwell the package
launches a column-tiled kernel instead, so this exits 77 there). One configuration, no
autotuning, so Argus can substitute its PTX. Checks c = silu(a) * b against torch in float32
and prints PASS; exits 77 without a CUDA GPU, torch, triton or liger-kernel.
Usage: run.py [--reps N]   (launch the kernel N times, default 1)
"""

import argparse
import importlib.metadata
import importlib.util
import sys

from argus.digest import tensor_digest  # noqa: E402


def skip(reason):
    print(f"run.py: {reason}", file=sys.stderr)
    sys.exit(77)


def version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (no distribution metadata)"


try:
    import torch
    import triton
except ImportError as e:
    skip(f"{e}; needs torch and triton")
if not torch.cuda.is_available():
    skip("no CUDA device")
if importlib.util.find_spec("liger_kernel") is None:
    skip("liger_kernel is not installed (pip install liger-kernel==0.8.5)")

from liger_kernel.ops.swiglu import _should_tile, swiglu_forward  # noqa: E402
from liger_kernel.ops.utils import calculate_settings  # noqa: E402

ROWS, COLS = 2048, 14336


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1, help="kernel launches (default 1)")
    reps = ap.parse_args().reps
    if reps < 1:
        ap.error("--reps must be at least 1")
    print(f"liger-kernel {version('liger-kernel')}, triton {triton.__version__}, "
          f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    if _should_tile(COLS):
        skip("on this GPU (Blackwell) swiglu_forward launches _swiglu_forward_kernel_tiled, "
             "not _swiglu_forward_kernel")
    torch.manual_seed(0)
    a = torch.randn(ROWS, COLS, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(ROWS, COLS, device="cuda", dtype=torch.bfloat16)
    for _ in range(reps):
        _, _, c = swiglu_forward(a, b)  # swiglu_forward(a, b, gate_multiplier=1.0) -> (a, b, c)
    torch.cuda.synchronize()
    # Bit-for-bit output, so a traced build's run can be compared with an untraced one.
    print(f"output digest {tensor_digest(c)}")

    ref = torch.nn.functional.silu(a.float()) * b.float()
    err = (c.float() - ref).abs().max().item()
    if not torch.allclose(c.float(), ref, atol=1e-2, rtol=1e-2):
        print(f"FAIL: max abs error {err} (atol = rtol = 1e-2)")
        sys.exit(1)
    block_size, num_warps = calculate_settings(COLS)
    print(f"PASS: swiglu_forward {ROWS}x{COLS} bf16: _swiglu_forward_kernel, {ROWS} CTAs x "
          f"{32 * num_warps} threads, BLOCK_SIZE={block_size}; max abs error {err:.4f}")


if __name__ == "__main__":
    main()

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

import sys

from argus import package_script
from argus.digest import tensor_digest

torch, triton = package_script.require_cuda()
package_script.require_package("liger_kernel", "pip install liger-kernel==0.8.5")

from liger_kernel.ops.swiglu import _should_tile, swiglu_forward  # noqa: E402
from liger_kernel.ops.utils import calculate_settings  # noqa: E402

ROWS, COLS = 2048, 14336


def main():
    reps = package_script.parse_reps(__doc__)
    package_script.print_versions("liger-kernel")
    if _should_tile(COLS):
        package_script.skip("on this GPU (Blackwell) swiglu_forward launches "
                            "_swiglu_forward_kernel_tiled, not _swiglu_forward_kernel")
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

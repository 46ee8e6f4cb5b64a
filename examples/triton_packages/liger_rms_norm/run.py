#!/usr/bin/env python3
"""Runs liger-kernel's RMSNorm forward kernel, unmodified: ``_rms_norm_forward_kernel`` of the
installed ``liger_kernel/ops/rms_norm.py`` (liger-kernel 0.8.5), launched by the package's own
``liger_kernel.ops.rms_norm.rms_norm_forward`` for Llama's hidden size 4096, bf16, casting mode
"llama" (LigerRMSNorm's default), with a weight. There ``calculate_settings(4096)`` gives
BLOCK_SIZE 4096 and num_warps 8, and BLOCK_SIZE > 256 selects the one-row-per-CTA kernel (not
``_block_rms_norm_forward_kernel``). One configuration, no autotuning, so Argus can substitute
its PTX. Checks Y and RSTD against a torch RMSNorm (HF LlamaRMSNorm's arithmetic) and prints
PASS; exits 77 without a CUDA GPU, torch, triton or liger-kernel.
Usage: run.py [--reps N]   (launch the kernel N times, default 1)
"""

import sys

from argus import package_script
from argus.digest import tensor_digest

torch, triton = package_script.require_cuda()
package_script.require_package("liger_kernel", "pip install liger-kernel==0.8.5")

from liger_kernel.ops.rms_norm import rms_norm_forward  # noqa: E402

ROWS, HIDDEN, EPS = 4096, 4096, 1e-6


def main():
    reps = package_script.parse_reps(__doc__)
    package_script.print_versions("liger-kernel")
    torch.manual_seed(0)
    x = torch.randn(ROWS, HIDDEN, device="cuda", dtype=torch.bfloat16)
    w = (1 + 0.1 * torch.randn(HIDDEN, device="cuda")).to(torch.bfloat16)
    for _ in range(reps):
        # rms_norm_forward(X, W, eps, offset, casting_mode, row_mode)
        y, _, rstd, block_size, num_warps, _ = rms_norm_forward(x, w, EPS, 0.0, "llama", None)
    torch.cuda.synchronize()
    # Bit-for-bit output, so a traced build's run can be compared with an untraced one.
    print(f"output digest {tensor_digest(y, rstd)}")

    # Llama casting: rstd in fp32, x * rstd cast back to bf16, then times the weight.
    x32 = x.float()
    ref_rstd = torch.rsqrt(x32.pow(2).mean(dim=-1) + EPS)
    ref = (x32 * ref_rstd[:, None]).to(torch.bfloat16).float() * w.float()
    err = (y.float() - ref).abs().max().item()
    rstd_err = ((rstd.float() - ref_rstd).abs() / ref_rstd).max().item()
    if not torch.allclose(y.float(), ref, atol=1e-2, rtol=1e-2) or rstd_err > 1e-4:
        print(f"FAIL: Y max abs error {err} (atol = rtol = 1e-2), RSTD max rel error {rstd_err} "
              f"(tolerance 1e-4)")
        sys.exit(1)
    print(f"PASS: rms_norm_forward {ROWS}x{HIDDEN} bf16, casting llama, weight: "
          f"_rms_norm_forward_kernel, {ROWS} CTAs x {32 * num_warps} threads, "
          f"BLOCK_SIZE={block_size}; Y max abs error {err:.4f}, RSTD max rel error {rstd_err:.2e}")


if __name__ == "__main__":
    main()

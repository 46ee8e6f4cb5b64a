#!/usr/bin/env python3
"""Launches the Triton TMA matmul of kernel.py (the Triton counterpart of examples/tma_gemm) in
one configuration (no autotuning, so Argus can substitute its PTX), checks it against
torch.matmul and prints PASS; exits 77 without a CUDA GPU or without torch/triton.
Usage: run.py [M N K] [--reps N]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
    import triton
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError as e:  # no Triton/PyTorch here
    print(f"run.py: {e}; needs torch and triton", file=sys.stderr)
    sys.exit(77)

from kernel import matmul_tma_argus  # noqa: E402


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    reps = 1
    if "--reps" in sys.argv:
        reps = int(sys.argv[sys.argv.index("--reps") + 1])
        args = [a for a in args if a != str(reps)]
    M, N, K = (int(x) for x in args[:3]) if len(args) >= 3 else (1024, 1024, 512)
    if not torch.cuda.is_available():
        print("run.py: no CUDA device", file=sys.stderr)
        sys.exit(77)
    BM, BN, BK = 128, 128, 64
    torch.manual_seed(0)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    a_desc = TensorDescriptor.from_tensor(a, [BM, BK])
    b_desc = TensorDescriptor.from_tensor(b, [BK, BN])
    c_desc = TensorDescriptor.from_tensor(c, [BM, BN])
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    for _ in range(reps):
        matmul_tma_argus[grid](a_desc, b_desc, c_desc, M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                               GROUP_M=8, NUM_STAGES=3, num_warps=4)
    torch.cuda.synchronize()
    ref = torch.matmul(a.float(), b.float())
    err = (c.float() - ref).abs().max().item()
    if err > 0.5:
        print(f"FAIL: max abs error {err}")
        sys.exit(1)
    print(f"PASS: {M}x{N}x{K}, {grid[0]} CTAs x 128 threads, {K // BK} K steps, max abs error {err:.4f}")


if __name__ == "__main__":
    main()

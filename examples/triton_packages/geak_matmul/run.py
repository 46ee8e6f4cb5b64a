#!/usr/bin/env python3
"""Runs geak-eval's TritonBench-G ``matmul_kernel``, unmodified: the @triton.jit function of the
installed ``geak_eval/data/TritonBench/data/TritonBench_G_v1/matmul_kernel.py`` (geak-eval
0.1.5), launched by that file's own ``matmul`` launcher as the package's perf harness
(``perf_G/golden_metrics/matmul_kernel_perf.py``) calls it: 128x128x64 blocks, Triton's default
num_warps 4 and num_stages 3, fp16. The kernel hard-codes M = N = K = 4096 and row-major strides,
so 4096^3 is the one size it computes correctly. The file is not imported (it runs its tests at
import time): Argus's argus.jit_source
(python/argus/jit_source.py, on the PYTHONPATH of Argus's runs) executes only its Triton imports, constants, @triton.jit
functions and the ``matmul`` launcher, from the file's own text. One configuration, no
autotuning, so Argus can substitute its PTX. Checks C against torch.matmul in float32 and prints
PASS; exits 77 without a CUDA GPU, torch, triton or geak-eval.
Usage: run.py [--reps N]   (launch the kernel N times, default 1)
"""

import sys

from argus import package_script
from argus.digest import tensor_digest
from argus.jit_source import load_jit_functions

torch, triton = package_script.require_cuda()
KERNEL_FILE = package_script.require_package(
    "geak_eval", "pip install --no-deps geak-eval==0.1.5",
    "data/TritonBench/data/TritonBench_G_v1/matmul_kernel.py")

M = N = K = 4096
BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 64  # the perf harness's call_op


def main():
    reps = package_script.parse_reps(__doc__)
    package_script.print_versions("geak-eval", kernel_file=KERNEL_FILE)
    mod = load_jit_functions(KERNEL_FILE, "geak_eval.data.TritonBench.data.TritonBench_G_v1."
                             "matmul_kernel", extra_globals={"torch": torch}, launchers=["matmul"])
    torch.manual_seed(0)
    a = torch.rand((M, K), device="cuda", dtype=torch.float16)  # as the perf harness: torch.rand
    b = torch.rand((K, N), device="cuda", dtype=torch.float16)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    for _ in range(reps):
        # matmul(c, a, b, M, N, K, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K):
        #   matmul_kernel[cdiv(M, BLOCK_SIZE_M), cdiv(N, BLOCK_SIZE_N)](c, a, b, BLOCK_SIZE_*)
        mod.matmul(c, a, b, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K)
    torch.cuda.synchronize()
    # Bit-for-bit output, so a traced build's run can be compared with an untraced one.
    print(f"output digest {tensor_digest(c)}")

    torch.backends.cuda.matmul.allow_tf32 = False  # torch's default: a float32 reference
    ref = torch.matmul(a.float(), b.float())
    err = ((c.float() - ref).abs() / ref.abs()).max().item()  # ref is ~1024 everywhere
    if err > 5e-3:
        print(f"FAIL: max relative error {err} (tolerance 5e-3)")
        sys.exit(1)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    print(f"PASS: matmul {M}x{N}x{K} fp16: matmul_kernel, {grid[0]}x{grid[1]} CTAs x 128 threads, "
          f"{BLOCK_M}x{BLOCK_N}x{BLOCK_K} blocks, {K // BLOCK_K} K steps; "
          f"max relative error {err:.2e}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs geak-eval's TritonBench-G FlashAttention forward ``_fwd_kernel``, unmodified: the
@triton.jit function of the installed
``geak_eval/data/TritonBench/data/TritonBench_G_v1/flash_attn.py`` (geak-eval 0.1.5), launched by
that file's own ``flash_attn_triton(q, k, v)`` as the package's perf harness
(``perf_G/golden_metrics/flash_attn_perf.py``) calls it: causal, ``sm_scale=1`` (the default, a
Python int, so a constexpr 1), fp16, 8 heads, seq 128, head dim 64 (batch 16 here), BLOCK_M 128,
BLOCK_N 64, num_warps 4, num_stages 4; block pointers (tl.make_block_ptr / tl.advance). The
file is not imported (it runs its tests at import time): Argus's argus.jit_source
(python/argus/jit_source.py, on the PYTHONPATH of Argus's runs) executes only its
Triton imports, constants, @triton.jit functions and the ``flash_attn_triton`` launcher, from the
file's own text. One configuration, no autotuning, so Argus can substitute its PTX. Checks O
against a float32 torch causal attention (scale 1; atol 2e-2, rtol 1e-2) and prints PASS; exits
77 without a CUDA GPU, torch, triton or geak-eval.
Usage: run.py [--reps N]   (launch the kernel N times, default 1)
"""

import sys

from argus import package_script
from argus.digest import tensor_digest
from argus.jit_source import load_jit_functions

torch, triton = package_script.require_cuda()
KERNEL_FILE = package_script.require_package(
    "geak_eval", "pip install --no-deps geak-eval==0.1.5",
    "data/TritonBench/data/TritonBench_G_v1/flash_attn.py")

BATCH, HEADS, SEQ, DIM = 16, 8, 128, 64


def main():
    reps = package_script.parse_reps(__doc__)
    package_script.print_versions("geak-eval", kernel_file=KERNEL_FILE)
    mod = load_jit_functions(KERNEL_FILE, "geak_eval.data.TritonBench.data.TritonBench_G_v1."
                             "flash_attn", extra_globals={"torch": torch},
                             launchers=["flash_attn_triton"])
    torch.manual_seed(0)
    q, k, v = (torch.randn((BATCH, HEADS, SEQ, DIM), device="cuda", dtype=torch.float16)
               for _ in range(3))
    for _ in range(reps):
        o = mod.flash_attn_triton(q, k, v)  # causal=True, sm_scale=1
    torch.cuda.synchronize()
    # Bit-for-bit output, so a traced build's run can be compared with an untraced one.
    print(f"output digest {tensor_digest(o)}")

    torch.backends.cuda.matmul.allow_tf32 = False  # torch's default: a float32 reference
    scores = q.float() @ k.float().transpose(-1, -2)  # sm_scale 1
    causal = torch.ones(SEQ, SEQ, device="cuda", dtype=torch.bool).tril()
    ref = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1) @ v.float()
    err = (o.float() - ref).abs().max().item()
    if not torch.allclose(o.float(), ref, atol=2e-2, rtol=1e-2):
        print(f"FAIL: max abs error {err} (atol 2e-2, rtol 1e-2)")
        sys.exit(1)
    print(f"PASS: flash_attn_triton causal fp16 B={BATCH} H={HEADS} S={SEQ} D={DIM}: _fwd_kernel, "
          f"{triton.cdiv(SEQ, 128)}x{BATCH * HEADS} CTAs x 128 threads, BLOCK_M=128 BLOCK_N=64, "
          f"{SEQ // 64} KV steps per CTA; max abs error {err:.4f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Launches the Triton TMA matmul of kernel.py (the Triton counterpart of examples/tma_gemm) in
one configuration (no autotuning, so Argus can substitute its PTX), checks it against
torch.matmul and prints PASS; exits 77 without a CUDA GPU or without torch/triton.
Usage: run.py [M N K] [--reps N] [--config BLOCK_K=64,NUM_STAGES=3,num_warps=4]

The configuration (BLOCK_K, NUM_STAGES, num_warps; defaults 64, 3, 4) also comes from
$ARGUS_MATMUL_CONFIG in the same KEY=VALUE,... form. A spec sets it under `run.env`: Argus runs
the script without arguments when it dumps the kernel's PTX, and the variant must launch the
configuration that was dumped (optimize.py writes one spec per candidate this way).
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


DEFAULT_CONFIG = {"BLOCK_K": 64, "NUM_STAGES": 3, "num_warps": 4}


def parse_config(text):
    """``BLOCK_K=64,NUM_STAGES=3,num_warps=4`` (any subset) -> dict over the defaults."""
    config = dict(DEFAULT_CONFIG)
    for item in filter(None, (t.strip() for t in (text or "").split(","))):
        key, _, value = item.partition("=")
        if key not in config or not value.isdigit():
            print(f"run.py: bad config item {item!r}; keys are {', '.join(config)}", file=sys.stderr)
            sys.exit(2)
        config[key] = int(value)
    return config


def main():
    argv = sys.argv[1:]
    options = {}
    for name in ("--reps", "--config"):
        if name in argv:
            at = argv.index(name)
            options[name] = argv[at + 1]
            del argv[at:at + 2]
    args = [a for a in argv if not a.startswith("--")]
    reps = int(options.get("--reps", 1))
    config = parse_config(options.get("--config", os.environ.get("ARGUS_MATMUL_CONFIG", "")))
    M, N, K = (int(x) for x in args[:3]) if len(args) >= 3 else (1024, 1024, 512)
    if not torch.cuda.is_available():
        print("run.py: no CUDA device", file=sys.stderr)
        sys.exit(77)
    BM, BN, BK = 128, 128, config["BLOCK_K"]
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
                               GROUP_M=8, NUM_STAGES=config["NUM_STAGES"],
                               num_warps=config["num_warps"])
    torch.cuda.synchronize()
    ref = torch.matmul(a.float(), b.float())
    err = (c.float() - ref).abs().max().item()
    if err > 0.5:
        print(f"FAIL: max abs error {err}")
        sys.exit(1)
    print(f"PASS: {M}x{N}x{K}, {grid[0]} CTAs x {32 * config['num_warps']} threads, "
          f"{K // BK} K steps, BLOCK_K={BK} NUM_STAGES={config['NUM_STAGES']}, "
          f"max abs error {err:.4f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Make a Proton intra-kernel trace of the TMA matmul on a GPU (the fixture of Argus's Proton
import, issue 8). Needs a CUDA GPU (sm_90), torch and Triton 3.6 with Proton.

The kernel is make_fixtures.py's ``matmul_tma_proton`` (Proton scopes ``mainloop`` and
``epilogue``), 1024x1024x512 FP16, 64 CTAs x 4 warps, launched once under

    proton.start(NAME, backend="instrumentation", data="trace")   -> NAME.chrome_trace
    proton.start(NAME, backend="instrumentation")                 -> NAME.hatchet (tree)

with Proton's default instrumentation mode (cycle metric, warp granularity). The result is
checked against torch.matmul. Usage: make_proton_trace.py OUTDIR
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "proton-trace"
    os.makedirs(out, exist_ok=True)
    try:
        import torch
        import triton
        import triton.profiler as proton
        import triton.profiler.language as pl
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError as e:
        print(f"make_proton_trace.py: {e}; needs torch and triton", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("make_proton_trace.py: no CUDA device", file=sys.stderr)
        return 77
    pl.enable_semantic("triton")
    from make_fixtures import MATMUL_CONSTS, _make_matmul_tma_proton

    kernel = _make_matmul_tma_proton()
    M, N, K = 1024, 1024, 512
    BM, BN, BK = MATMUL_CONSTS["BLOCK_M"], MATMUL_CONSTS["BLOCK_N"], MATMUL_CONSTS["BLOCK_K"]
    torch.manual_seed(0)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    a_desc = TensorDescriptor.from_tensor(a, [BM, BK])
    b_desc = TensorDescriptor.from_tensor(b, [BK, BN])
    c_desc = TensorDescriptor.from_tensor(c, [BM, BN])
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)

    def launch():
        kernel[grid](a_desc, b_desc, c_desc, M, N, K, num_warps=4, **MATMUL_CONSTS)

    results = {}
    for data in ("trace", "tree"):
        name = os.path.join(out, "matmul_tma_proton" + ("" if data == "trace" else "_tree"))
        proton.start(name, backend="instrumentation", data=data)
        launch()
        torch.cuda.synchronize()
        proton.finalize()
        results[data] = sorted(f for f in os.listdir(out) if f.startswith(os.path.basename(name)))
    err = (c.float() - torch.matmul(a.float(), b.float())).abs().max().item()
    print(json.dumps({"grid": grid[0], "num_warps": 4, "max_abs_error": err, "files": results,
                      "triton": triton.__version__, "torch": torch.__version__,
                      "device": torch.cuda.get_device_name()}))
    return 0 if err <= 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())

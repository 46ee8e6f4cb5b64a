#!/usr/bin/env python3
"""Generate the Triton fixture with Argus markers (python/argus/triton.py):

  tests/data/ptx/triton_matmul_tma_argus.ptx
  tests/data/triton/matmul_tma_argus.{ttir,ttgir,json}

The kernel is make_fixtures.py's TMA matmul with ``region_begin``/``region_begin_iter``/``region_end`` around the K loop
(``mainloop``), each iteration (``iteration``, iteration coordinate = the loop variable) and the
store (``epilogue``). Same toolchain and target as make_fixtures.py (Triton 3.6.0 from PyPI,
GPUTarget("cuda", 90, 32), no GPU needed). Regenerate from the repository root with

    /tmp/tritonvenv/bin/python tests/data/triton/make_argus_marker_fixture.py
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
repo_root = os.path.abspath(os.path.join(here, "..", "..", ".."))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(repo_root, "python"))

import make_fixtures as mf  # noqa: E402  (pins the toolchain on import)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from argus.triton import region_begin, region_begin_iter, region_end  # noqa: E402


@triton.jit
def matmul_tma_argus(a_desc, b_desc, c_desc, M, N, K,  #
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  #
                     GROUP_M: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    group = pid // per_group
    first_m = group * GROUP_M
    rows = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows
    tile_n = (pid % per_group) // rows
    off_m = tile_m * BLOCK_M
    off_n = tile_n * BLOCK_N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    region_begin("mainloop")
    for k in tl.range(0, K, BLOCK_K, num_stages=NUM_STAGES):
        region_begin_iter("iteration", k // BLOCK_K)
        a = a_desc.load([off_m, k])
        b = b_desc.load([k, off_n])
        acc = tl.dot(a, b, acc)
        region_end("iteration")
    region_end("mainloop")
    region_begin("epilogue")
    c_desc.store([off_m, off_n], acc.to(tl.float16))
    region_end("epilogue")


def main():
    ptx = mf._compile_and_write(repo_root, "matmul_tma_argus", matmul_tma_argus, mf.MATMUL_SIG,
                                mf.MATMUL_CONSTS, mf.MATMUL_OPTS,
                                extra_meta={"argus_regions": ["mainloop", "mainloop/iteration",
                                                              "epilogue"]})
    for needle in ("cp.async.bulk.tensor", "mbarrier", "wgmma", "// @argus begin mainloop",
                   "// @argus end epilogue"):
        assert needle in ptx, f"matmul_tma_argus PTX lacks {needle}"
    print("wrote matmul_tma_argus fixtures")


if __name__ == "__main__":
    main()

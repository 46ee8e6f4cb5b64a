"""The Triton TMA matmul of examples/triton_matmul with Argus regions (python/argus/triton.py).

FP16 x FP16 -> FP32 accumulate, 128x128x64 tiles, a pipelined K loop (num_stages=3) whose loads
Triton lowers to TMA + mbarrier and whose dot becomes wgmma on sm_90a. Regions: `mainloop` (the
K loop), `mainloop/iteration` (one K step; iteration coordinate = the K step index), `epilogue`
(the store). Imports only Triton, so fixtures can be compiled from it without a GPU or PyTorch
(tests/data/triton/make_argus_marker_fixture.py).
"""

import os
import sys

import triton
import triton.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
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

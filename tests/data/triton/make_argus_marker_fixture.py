#!/usr/bin/env python3
"""Generate the Triton fixture with Argus markers (python/argus/triton.py):

  tests/data/ptx/triton_matmul_tma_argus.ptx
  tests/data/triton/matmul_tma_argus.{ttir,ttgir,json}

The kernel is examples/triton_matmul/kernel.py: make_fixtures.py's TMA matmul with
``region_begin``/``region_begin_iter``/``region_end`` around the K loop (``mainloop``), each
iteration (``iteration``, iteration coordinate = the K step) and the store (``epilogue``).
Same toolchain and target as make_fixtures.py (Triton 3.6.0 from PyPI, GPUTarget("cuda", 90,
32), no GPU needed). Regenerate from the repository root with

    /tmp/tritonvenv/bin/python tests/data/triton/make_argus_marker_fixture.py
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
repo_root = os.path.abspath(os.path.join(here, "..", "..", ".."))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(repo_root, "python"))

import make_fixtures as mf  # noqa: E402  (pins the toolchain on import)

sys.path.insert(0, os.path.join(repo_root, "examples", "triton_matmul"))
from kernel import matmul_tma_argus  # noqa: E402  (the example's kernel, marked with argus.triton)


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

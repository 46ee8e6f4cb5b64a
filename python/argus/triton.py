"""Argus region markers for Triton kernels.

Call them inside a ``@triton.jit`` kernel around the code a region covers::

    from argus.triton import region_begin, region_begin_iter, region_end

    @triton.jit
    def matmul(...):
        region_begin("mainloop")
        for k in tl.range(0, K, BLOCK_K, num_stages=3):
            region_begin_iter("iteration", k)   # iteration coordinate: the loop variable
            ...
            region_end("iteration")
        region_end("mainloop")

Each call is a one-instruction inline-asm statement (``mov.b32``) that carries an Argus marker
comment, ``// @argus begin NAME [iter=...] [role=...]``, through TTGIR, LLVM IR and PTX, so
``argus regions`` finds the same region tree (and the same region IDs) in a kernel's TTGIR and
in its PTX, and Argus's PTX passes (tracing, painting, probes) work on Triton kernels as on CUDA
C++ ones. In an ordinary run ptxas drops the comments; the ``mov`` has no consumer and is
removed. The statements are marked impure, so Triton keeps them in program order.

Proton scopes (``triton.profiler.language.scope``) are read from TTGIR as regions too, but they
do not reach PTX unless Proton's own instrumentation is compiled in.
"""

import triton
import triton.language as tl

__all__ = ["region_begin", "region_begin_iter", "region_begin_role", "region_begin_iter_role",
           "region_end"]


@triton.jit
def region_begin(name: tl.constexpr):
    """Opens region ``name``."""
    tl.inline_asm_elementwise("// @argus begin " + name + "\n\tmov.b32 $0, 0;", "=r", [],
                              dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def region_begin_iter(name: tl.constexpr, iteration):
    """Opens region ``name``; ``iteration`` (an integer scalar such as the loop variable) is the
    occurrence's iteration coordinate (scope ``iter=``)."""
    tl.inline_asm_elementwise("// @argus begin " + name + " iter=$1\n\tmov.b32 $0, $1;", "=r,r",
                              [iteration], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def region_begin_role(name: tl.constexpr, role: tl.constexpr):
    """Opens region ``name`` with role tag ``role`` (scope ``role=``, e.g. "producer")."""
    tl.inline_asm_elementwise("// @argus begin " + name + " role=" + role + "\n\tmov.b32 $0, 0;",
                              "=r", [], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def region_begin_iter_role(name: tl.constexpr, iteration, role: tl.constexpr):
    """Opens region ``name`` with an iteration coordinate and a role tag."""
    tl.inline_asm_elementwise("// @argus begin " + name + " iter=$1 role=" + role +
                              "\n\tmov.b32 $0, $1;", "=r,r", [iteration], dtype=tl.int32,
                              is_pure=False, pack=1)


@triton.jit
def region_end(name: tl.constexpr):
    """Closes region ``name`` (markers must nest)."""
    tl.inline_asm_elementwise("// @argus end " + name + "\n\tmov.b32 $0, 0;", "=r", [],
                              dtype=tl.int32, is_pure=False, pack=1)

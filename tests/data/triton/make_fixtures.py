#!/usr/bin/env python3
"""Generate the Triton-made PTX / TTGIR / TTIR fixtures for Argus's PTX parser tests.

The kernels below were written for Argus (not copied from Triton's tutorials):

  * ``matmul_tma``        FP16 x FP16 -> FP32-accumulate matmul, 128x128x64 tiles, K loop with
                          ``num_stages=3``, A/B/C passed as host TMA tensor descriptors
                          (``tensordesc<fp16[...]>``).  On sm_90a Triton lowers the loads to
                          ``cp.async.bulk.tensor`` + ``mbarrier`` and the dot to ``wgmma``.
  * ``matmul_tma_proton`` the same kernel with Proton named scopes (``mainloop``, ``epilogue``)
                          compiled with Proton's instrumentation passes wired in by hand (no GPU
                          needed): the PTX carries the ``%clock``/``%globaltimer`` records.
  * ``attention_fwd``     FlashAttention-style forward (online softmax with exp2), FP16, head dim
                          64, BLOCK_M=128 / BLOCK_N=64, plain pointers + strides (so the K/V loop
                          is pipelined with ``cp.async`` rather than TMA), ``wgmma`` for QK^T and PV.

Everything is compiled for ``GPUTarget("cuda", 90, 32)`` (Triton picks ``.target sm_90a``) with
``triton.compile(triton.compiler.ASTSource(...), target=..., options=...)``; no GPU and no CUDA
driver are needed.  Triton's bundled ptxas (CUDA 12.8, shipped in the wheel) is used for the
cubin step and decides the PTX ISA version (``.version 8.7``); ``TRITON_PTXAS_PATH`` is removed
from the environment so that a system ptxas cannot change the output.

Outputs (paths relative to the repository root):

  tests/data/ptx/triton_matmul_tma.ptx          tests/data/triton/matmul_tma.{ttir,ttgir,json}
  tests/data/ptx/triton_matmul_tma_proton.ptx   tests/data/triton/matmul_tma_proton.{ttir,ttgir,json}
  tests/data/ptx/triton_attention_fwd.ptx       tests/data/triton/attention_fwd.{ttir,ttgir,json}

The ``.json`` files hold the compile metadata a launcher needs (num_warps, shared memory bytes,
TMA descriptor metadata, profile scratch size, kernel name, signature, constexprs).

Note: the IR/PTX carries debug line info (``.file``/``.loc``) that names this script and
Triton's ``language/standard.py`` by absolute path, so regenerating from another checkout or venv
location changes those lines only.  Output is otherwise deterministic (two runs diff clean).

Regenerate (exact versions used for the checked-in files: Python 3.11.7, triton==3.6.0 from PyPI,
Linux x86_64; no GPU was present):

    python3 -m venv /tmp/tritonvenv
    /tmp/tritonvenv/bin/pip install triton==3.6.0
    /tmp/tritonvenv/bin/python tests/data/triton/make_fixtures.py        # from the repo root

On a machine with Triton 3.6 preinstalled, just run the last line with that Python (it needs no
network and no GPU).  ``--out-root DIR`` writes under DIR instead of the repository root;
``--check`` additionally runs ``ptxas -arch=sm_90a`` (``$PTXAS`` or /usr/local/cuda/bin/ptxas)
on each PTX file.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

# Pin the toolchain: bundled ptxas, fresh cache (so nothing stale is reused).
os.environ.pop("TRITON_PTXAS_PATH", None)
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="argus_triton_cache_")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
H100_MAX_SHARED = 232448  # bytes of opt-in shared memory per block on H100 (sm_90)

# --------------------------------------------------------------------------------------------
# (a) TMA matmul
# --------------------------------------------------------------------------------------------


@triton.jit
def matmul_tma(a_desc, b_desc, c_desc, M, N, K,  #
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  #
               GROUP_M: tl.constexpr, NUM_STAGES: tl.constexpr):
    # 1-D launch grid, tiles visited in groups of GROUP_M rows for L2 reuse.
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
    for k in tl.range(0, K, BLOCK_K, num_stages=NUM_STAGES):
        a = a_desc.load([off_m, k])  # [BLOCK_M, BLOCK_K] fp16 via TMA
        b = b_desc.load([k, off_n])  # [BLOCK_K, BLOCK_N] fp16 via TMA
        acc = tl.dot(a, b, acc)  # fp32 accumulate -> wgmma
    c_desc.store([off_m, off_n], acc.to(tl.float16))


# Same kernel with Proton named scopes.  Kept as a separate function so the plain fixture has no
# instrumentation in it.
def _make_matmul_tma_proton():
    import triton.profiler.language as pl

    @triton.jit
    def matmul_tma_proton(a_desc, b_desc, c_desc, M, N, K,  #
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
        with pl.scope("mainloop"):
            for k in tl.range(0, K, BLOCK_K, num_stages=NUM_STAGES):
                a = a_desc.load([off_m, k])
                b = b_desc.load([k, off_n])
                acc = tl.dot(a, b, acc)
        with pl.scope("epilogue"):
            c_desc.store([off_m, off_n], acc.to(tl.float16))

    return matmul_tma_proton


MATMUL_CONSTS = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, NUM_STAGES=3)
MATMUL_SIG = {
    "a_desc": "tensordesc<fp16[128, 64]>",  # [BLOCK_M, BLOCK_K]
    "b_desc": "tensordesc<fp16[64, 128]>",  # [BLOCK_K, BLOCK_N]
    "c_desc": "tensordesc<fp16[128, 128]>",  # [BLOCK_M, BLOCK_N]
    "M": "i32", "N": "i32", "K": "i32",
    **{k: "constexpr" for k in MATMUL_CONSTS},
}
MATMUL_OPTS = dict(num_warps=4, num_stages=3)

# --------------------------------------------------------------------------------------------
# (b) fused attention forward
# --------------------------------------------------------------------------------------------


@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sm_scale,  #
                  stride_qh, stride_qm, stride_kh, stride_kn, stride_vh, stride_vn,  #
                  stride_oh, stride_om, seq_len,  #
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # grid = (cdiv(seq_len, BLOCK_M), batch * heads); tensors are [B*H, seq, HEAD_DIM] with unit
    # stride on the head dimension.
    start_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)

    q_tile = q_ptr + bh * stride_qh + rows[:, None] * stride_qm + dims[None, :]
    q = tl.load(q_tile, mask=rows[:, None] < seq_len, other=0.0)

    # Softmax in base 2: fold log2(e) into the scale once.
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full((BLOCK_M, ), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M, ), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)

    k_base = k_ptr + bh * stride_kh
    v_base = v_ptr + bh * stride_vh
    for start_n in tl.range(0, seq_len, BLOCK_N, num_stages=2):
        kv_rows = start_n + cols
        kv_ok = kv_rows < seq_len
        k_t = tl.load(k_base + dims[:, None] + kv_rows[None, :] * stride_kn, mask=kv_ok[None, :],
                      other=0.0)  # [HEAD_DIM, BLOCK_N]
        s = tl.dot(q, k_t) * qk_scale  # [BLOCK_M, BLOCK_N] fp32
        s = tl.where(kv_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + kv_rows[:, None] * stride_vn + dims[None, :], mask=kv_ok[:, None],
                    other=0.0)  # [BLOCK_N, HEAD_DIM]
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new

    acc = acc / l_i[:, None]
    # log-sum-exp (natural log) per row, as a backward pass would want it.
    tl.store(lse_ptr + bh * seq_len + rows, (m_i + tl.math.log2(l_i)) * 0.6931471805599453,
             mask=rows < seq_len)
    o_tile = o_ptr + bh * stride_oh + rows[:, None] * stride_om + dims[None, :]
    tl.store(o_tile, acc.to(tl.float16), mask=rows[:, None] < seq_len)


ATTN_CONSTS = dict(HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64)
ATTN_SIG = {
    "q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16", "lse_ptr": "*fp32",
    "sm_scale": "fp32",
    "stride_qh": "i32", "stride_qm": "i32", "stride_kh": "i32", "stride_kn": "i32",
    "stride_vh": "i32", "stride_vn": "i32", "stride_oh": "i32", "stride_om": "i32",
    "seq_len": "i32",
    **{k: "constexpr" for k in ATTN_CONSTS},
}
# What Triton's launcher would specialize for 16-byte aligned pointers and strides that are
# multiples of 16: tt.divisibility=16 on every pointer and stride argument.
_ATTN_ARGS = list(ATTN_SIG)
ATTN_ATTRS = {(_ATTN_ARGS.index(n), ): [["tt.divisibility", 16]]
              for n in _ATTN_ARGS if n.endswith("_ptr") or n.startswith("stride_")}
ATTN_OPTS = dict(num_warps=8, num_stages=2)

# --------------------------------------------------------------------------------------------


def _enable_proton_instrumentation():
    """Wire Proton's instrumentation passes into the CUDA backend without a GPU.

    This mirrors what ``triton.profiler.hooks.instrumentation.InstrumentationHook.activate`` does,
    minus the device queries (``max_shared_mem`` is taken as the H100 value) and the runtime
    profile-buffer allocator (only needed at launch time).
    """
    from triton.backends import backends
    from triton.profiler import mode
    from triton.profiler.flags import flags
    from triton.profiler.hooks.instrumentation import Instrumentation
    import triton.profiler.language as pl
    from triton._C.libtriton import passes as triton_passes
    from triton._C.libtriton import proton as triton_proton

    pl.enable_semantic("triton")  # Proton scopes are Gluon-only by default
    flags.instrumentation_on = True
    m = mode.Default()  # cycle metric, warp granularity, circular shared-memory buffer

    def to_llvmir_passes(pm):
        triton_proton.add_convert_proton_to_protongpu(pm, m.metric_type, m.sampling_strategy, m.sampling_options,
                                                      m.granularity, m.buffer_strategy, m.buffer_type, m.buffer_size,
                                                      H100_MAX_SHARED, 1, 128, True)
        triton_passes.common.add_cse(pm)
        triton_proton.add_allocate_proton_shared_memory(pm)

    def to_llvm_passes(pm):
        triton_proton.add_allocate_proton_global_scratch_buffer(pm)
        triton_proton.add_convert_proton_nvidia_gpu_to_llvm(pm)

    backends["nvidia"].compiler.instrumentation = Instrumentation({
        "ttgpuir_to_llvmir": to_llvmir_passes,
        "llvmir_to_llvm": to_llvm_passes,
    })
    triton.knobs.compilation.instrumentation_mode = str(m)
    return str(m)


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    print(f"  wrote {path} ({os.path.getsize(path)} bytes)")


def _compile_and_write(out_root, name, fn, sig, consts, opts, attrs=None, extra_meta=None):
    src = ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs)
    compiled = triton.compile(src, target=TARGET, options=opts)
    asm = compiled.asm
    md = compiled.metadata
    print(f"{name}: kernel {md.name}, num_warps={md.num_warps}, num_stages={md.num_stages}, shared={md.shared} B")
    _write(os.path.join(out_root, "tests/data/ptx", f"triton_{name}.ptx"), asm["ptx"])
    _write(os.path.join(out_root, "tests/data/triton", f"{name}.ttir"), asm["ttir"])
    _write(os.path.join(out_root, "tests/data/triton", f"{name}.ttgir"), asm["ttgir"])
    meta = {
        "triton_version": triton.__version__,
        "target": {"backend": TARGET.backend, "arch": TARGET.arch, "warp_size": TARGET.warp_size},
        "kernel_name": md.name,
        "signature": sig,
        "constexprs": consts,
        "options": opts,
        "num_warps": md.num_warps,
        "num_ctas": md.num_ctas,
        "num_stages": md.num_stages,
        "shared_bytes": md.shared,
        "global_scratch_size": md.global_scratch_size,
        "global_scratch_align": md.global_scratch_align,
        "profile_scratch_size": md.profile_scratch_size,
        "profile_scratch_align": md.profile_scratch_align,
        "tensordesc_meta": md.tensordesc_meta,
        "hash": md.hash,
    }
    meta.update(extra_meta or {})
    _write(os.path.join(out_root, "tests/data/triton", f"{name}.json"), json.dumps(meta, indent=2) + "\n")
    return asm["ptx"]


def _ptxas_check(ptx_path):
    ptxas = os.environ.get("PTXAS") or shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([ptxas, "-arch=sm_90a", ptx_path, "-o", os.path.join(d, "out.cubin")],
                           capture_output=True, text=True)
    status = "ok" if r.returncode == 0 else f"FAILED rc={r.returncode}\n{r.stderr}"
    print(f"  {ptxas} -arch=sm_90a {ptx_path}: {status}")
    return r.returncode == 0


def main():
    repo_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-root", default=repo_root, help="directory that holds tests/data (default: repo root)")
    ap.add_argument("--check", action="store_true", help="run ptxas -arch=sm_90a on each PTX afterwards")
    args = ap.parse_args()

    from triton.backends.nvidia.compiler import get_ptxas
    print(f"python {sys.version.split()[0]}, triton {triton.__version__}, target {TARGET} (sm_90a)")
    print(f"triton ptxas: {get_ptxas(TARGET.arch).path}")

    ptx = _compile_and_write(args.out_root, "matmul_tma", matmul_tma, MATMUL_SIG, MATMUL_CONSTS, MATMUL_OPTS)
    for needle in ("cp.async.bulk.tensor", "mbarrier", "wgmma"):
        assert needle in ptx, f"matmul_tma PTX lacks {needle}"

    ptx = _compile_and_write(args.out_root, "attention_fwd", attention_fwd, ATTN_SIG, ATTN_CONSTS, ATTN_OPTS,
                             attrs=ATTN_ATTRS)
    assert "wgmma" in ptx, "attention_fwd PTX lacks wgmma"

    # Last, because it changes global backend state.
    proton_mode = _enable_proton_instrumentation()
    ptx = _compile_and_write(args.out_root, "matmul_tma_proton", _make_matmul_tma_proton(), MATMUL_SIG,
                             MATMUL_CONSTS, MATMUL_OPTS,
                             extra_meta={"proton_mode": proton_mode, "proton_scopes": ["mainloop", "epilogue"]})
    for needle in ("cp.async.bulk.tensor", "mbarrier", "wgmma", "%clock"):
        assert needle in ptx, f"matmul_tma_proton PTX lacks {needle}"

    if args.check:
        ok = all(
            _ptxas_check(os.path.join(args.out_root, "tests/data/ptx", f"triton_{n}.ptx"))
            for n in ("matmul_tma", "attention_fwd", "matmul_tma_proton"))
        if not ok:
            sys.exit(1)


if __name__ == "__main__":
    main()

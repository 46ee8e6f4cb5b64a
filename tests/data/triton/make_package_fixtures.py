#!/usr/bin/env python3
"""Generate PTX / TTGIR fixtures of real Triton kernels shipped in two PyPI packages.

Unlike ``make_fixtures.py`` (kernels written for Argus), nothing compiled here was written
here: each kernel is the package's own ``@triton.jit`` function, taken from the installed
package's source file without changing a character of it.

Packages and kernels (exact versions used for the checked-in files):

  * ``liger-kernel==0.8.5`` (``liger_kernel/ops/*.py``)
      - ``rms_norm_fwd``       ``_rms_norm_forward_kernel`` (rms_norm.py), as
                               ``rms_norm_forward`` launches it for hidden size 4096, bf16,
                               casting_mode "llama" (LigerRMSNorm's default), with a weight:
                               BLOCK_SIZE = next_pow2(4096) = 4096, num_warps = 8
                               (``calculate_settings``); BLOCK_SIZE > 256 selects the one-row
                               kernel, not ``_block_rms_norm_forward_kernel``.
      - ``swiglu_fwd``         ``_swiglu_forward_kernel`` (swiglu.py, calls the jit helper
                               ``silu``), as ``swiglu_forward`` launches it on non-Blackwell GPUs
                               for Llama-3-8B's intermediate size 14336, bf16:
                               ``n_cols`` constexpr 14336, BLOCK_SIZE = 16384, num_warps = 16.
      - ``cross_entropy_fwd``  ``liger_cross_entropy_kernel`` (cross_entropy.py), as
                               ``fused_linear_cross_entropy_forward`` launches it per chunk (the
                               Triton half of fused linear cross entropy; the matmul is torch):
                               vocabulary 128256 (Llama-3), bf16 logits, int64 targets,
                               reduction "mean", no class weight / softcap / z-loss / accuracy /
                               predicted tokens, gradients on (HAS_GRADIENTS=True),
                               BLOCK_SIZE = min(32768, next_pow2(V)) = 32768, num_warps = 32.
                               Two runtime loops over the vocabulary (online softmax, then the
                               gradient pass).
  * ``geak-eval==0.1.5`` (TritonBench-G kernels, in
    ``geak_eval/data/TritonBench/data/TritonBench_G_v1/*.py``)
      - ``matmul_kernel``      ``matmul_kernel`` (matmul_kernel.py): fp16 4096^3 matmul with
                               hard-coded strides, K loop ``for k in range(0, cdiv(K, BLOCK_K))``;
                               128x128x64 blocks as the package's perf harness
                               (``perf_G/golden_metrics/matmul_kernel_perf.py``) launches it,
                               default num_warps = 4, num_stages = 3.
      - ``flash_attn_fwd``     ``_fwd_kernel`` (flash_attn.py): causal FlashAttention forward with
                               block pointers (``tl.make_block_ptr`` / ``tl.advance``) as
                               ``flash_attn_triton`` launches it for the perf harness's shape
                               (fp16, 8 heads, seq 128, head dim 64; batch 16 chosen here):
                               BLOCK_M = 128, BLOCK_N = 64, DIM = 64, IS_CAUSAL = True,
                               num_warps = 4 (head dim <= 64), num_stages = 4, and ``sm_scale=1``
                               (the function's default, a Python int, so Triton's launcher makes
                               it a constexpr 1).

Signature, constexprs and ``tt.divisibility`` attributes are derived from concrete launch
argument values the way Triton's launcher does it (``native_specialize_impl``: the int 1 and
``None`` become constexprs, ints divisible by 16 and 16-byte aligned pointers get
``tt.divisibility=16``); see ``KERNELS`` below for each kernel's values.

How the kernels are loaded without torch: every one of these source files imports torch at the
top (and the TritonBench files run their tests at import time), so the file is not imported.
Instead Argus's ``argus.jit_source`` (``python/argus/jit_source.py``, found through this checkout)
parses it with ``ast`` and executes only its top-level ``import triton...`` / ``from triton...``
statements, simple constant assignments (e.g. liger's ``_CASTING_MODE_*`` and ``LOG2_E``
constexprs) and ``@triton.jit`` function definitions, compiled *with the file's own path and
line numbers*, so ``inspect.getsource`` (which ``triton.jit`` uses) reads the
unmodified text from the installed file.  Names that the package binds under a runtime
``if``/``try`` (liger's ``rsqrt`` and ``tanh``) are bound to what that code picks on CUDA with
Triton >= 3.0: ``triton.language.extra.libdevice.rsqrt`` / ``.tanh``.

Everything is compiled for ``GPUTarget("cuda", 90, 32)`` (Triton picks ``.target sm_90a``) with
``triton.compile(triton.compiler.ASTSource(...), target=..., options=...)``; no GPU and no CUDA
driver are needed.  Triton's bundled ptxas (CUDA 12.8) is used for the cubin step
(``TRITON_PTXAS_PATH`` is removed from the environment); the PTX says ``.version 8.7``.

Outputs (paths relative to the repository root), for each kernel NAME above and PKG in
``liger_kernel`` / ``geak_eval``:

  tests/data/ptx/triton_pkg_PKG_NAME.ptx      tests/data/triton/triton_pkg_PKG_NAME.ttgir

Line info (``.file``/``.loc``) in the PTX names the package's source files by their absolute
path in the venv (``/tmp/tvenv/lib/python3.11/site-packages/...``).

Regenerate (Python 3.11.7, Linux x86_64, no GPU; network only for the pip steps; torch is not
installed and not needed):

    python3 -m venv /tmp/tvenv
    /tmp/tvenv/bin/pip install --no-deps triton==3.6.0 liger-kernel==0.8.5 geak-eval==0.1.5
    /tmp/tvenv/bin/python tests/data/triton/make_package_fixtures.py --check     # from the repo root

``--out-root DIR`` writes under DIR instead of the repository root; ``--check`` also runs
``ptxas -arch=sm_90a`` (``$PTXAS`` or /usr/local/cuda/bin/ptxas) on each PTX file.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

# The kernel-source loader is Argus's own (python/argus/jit_source.py): the checkout's, ahead of
# any installed copy.
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                                "python")))
from argus.jit_source import load_jit_functions, package_file  # noqa: E402

os.environ.pop("TRITON_PTXAS_PATH", None)
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="argus_triton_cache_")

import triton  # noqa: E402
from triton._C.libtriton import native_specialize_impl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.nvidia.compiler import CUDABackend  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
MAX_PTX_BYTES = 1 << 20

# --------------------------------------------------------------------------------------------
# Loading a package's kernels from its source file without importing the file
# --------------------------------------------------------------------------------------------


def _package_file(package, relpath):
    path = package_file(package, relpath)
    if path is None:
        sys.exit(f"package {package!r} is not installed in this Python ({sys.executable})")
    return path


# --------------------------------------------------------------------------------------------
# Launch arguments -> (signature, constexprs, attrs), as Triton's launcher specializes them
# --------------------------------------------------------------------------------------------


class Ptr:
    """Stand-in for a tensor argument: its Triton element type and 16-byte alignment."""

    def __init__(self, dtype, aligned=True):
        self.dtype, self.aligned = dtype, aligned


def specialize(fn, args):
    """``args`` maps every parameter of ``fn`` to its launch value (Ptr, int, float, bool, None,
    str, or a constexpr value).  Returns the signature, constexprs and attrs for ASTSource."""
    sig, consts, attrs = {}, {}, {}
    assert set(args) == set(fn.arg_names), (set(args) ^ set(fn.arg_names))
    for i, p in enumerate(fn.params):
        v = args[p.name]
        if p.is_constexpr:
            sig[p.name], consts[p.name] = "constexpr", v
            continue
        if isinstance(v, Ptr):
            ty, key = f"*{v.dtype}", "D" if (v.aligned and not p.do_not_specialize_on_alignment) else ""
        else:
            ty, key = native_specialize_impl(CUDABackend, v, False, not p.do_not_specialize,
                                             not p.do_not_specialize_on_alignment)
        sig[p.name] = ty
        if ty == "constexpr":
            consts[p.name] = key
        elif isinstance(key, str) and key:
            attrs[(i, )] = CUDABackend.parse_attr(key)
    return sig, consts, attrs


# --------------------------------------------------------------------------------------------
# The kernels
# --------------------------------------------------------------------------------------------


def _liger(relpath, module):
    from triton.language.extra import libdevice
    # rms_norm.py / cross_entropy.py bind rsqrt / tanh under `if compare_version("triton", >=,
    # "3.0.0") and not is_npu_available(): from triton.language.extra.libdevice import ...`.
    return load_jit_functions(_package_file("liger_kernel", relpath), module,
                              {"rsqrt": libdevice.rsqrt, "tanh": libdevice.tanh})


def _geak(filename):
    return load_jit_functions(
        _package_file("geak_eval", os.path.join("data/TritonBench/data/TritonBench_G_v1", filename)),
        "geak_eval.data.TritonBench.data.TritonBench_G_v1." + filename[:-3])


def kernels():
    bf16, fp16, fp32, i64 = "bf16", "fp16", "fp32", "i64"

    rms = _liger("ops/rms_norm.py", "liger_kernel.ops.rms_norm")
    H = 4096  # hidden size; X is [8192, 4096] bf16, W [4096] bf16, RSTD [8192] fp32 (llama mode)
    yield ("liger_kernel", "rms_norm_fwd", rms._rms_norm_forward_kernel, dict(
        Y_ptr=Ptr(bf16), Y_row_stride=H, X_ptr=Ptr(bf16), X_row_stride=H, W_ptr=Ptr(bf16),
        W_row_stride=1, RSTD_ptr=Ptr(fp32), RSTD_row_stride=1, n_cols=H, eps=1e-6, offset=0.0,
        casting_mode=0, elementwise_affine=True, BLOCK_SIZE=4096), dict(num_warps=8))

    sw = _liger("ops/swiglu.py", "liger_kernel.ops.swiglu")
    I = 14336  # Llama-3-8B intermediate size; a, b, c are [8192, 14336] bf16
    yield ("liger_kernel", "swiglu_fwd", sw._swiglu_forward_kernel, dict(
        a_ptr=Ptr(bf16), b_ptr=Ptr(bf16), c_ptr=Ptr(bf16), stride=I, gate_multiplier=1.0,
        n_cols=I, BLOCK_SIZE=16384), dict(num_warps=16))

    ce = _liger("ops/cross_entropy.py", "liger_kernel.ops.cross_entropy")
    V = 128256  # Llama-3 vocabulary; logits chunk [chunk, V] bf16, targets int64
    yield ("liger_kernel", "cross_entropy_fwd", ce.liger_cross_entropy_kernel, dict(
        X_ptr=Ptr(bf16), X_stride=V, Y_ptr=Ptr(i64), Y_stride=1, weight_ptr=None,
        loss_ptr=Ptr(fp32), z_loss_ptr=None, loss_stride=1, token_accuracy_ptr=None,
        token_accuracy_stride=0, predicted_tokens_ptr=None, predicted_tokens_stride=0,
        n_cols=V, n_non_ignore=7937, sum_non_ignore_weight=7937, weight_sum=0.0,
        ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0, reduction="mean",
        softcap=None, RETURN_Z_LOSS=False, RETURN_TOKEN_ACCURACY=False,
        RETURN_PREDICTED_TOKENS=False, BLOCK_SIZE=32768, HAS_WEIGHT=False,
        HAS_SOFTCAPPING=False, HAS_GRADIENTS=True), dict(num_warps=32))

    mm = _geak("matmul_kernel.py")
    yield ("geak_eval", "matmul_kernel", mm.matmul_kernel, dict(
        c_ptr=Ptr(fp16), a_ptr=Ptr(fp16), b_ptr=Ptr(fp16),
        BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64), dict(num_warps=4, num_stages=3))

    fa = _geak("flash_attn.py")
    B, NH, S, D = 16, 8, 128, 64  # q, k, v, o: [B, NH, S, D] fp16 contiguous; L: [B*NH, S] fp32
    strides = dict(bs=NH * S * D, head=S * D, seqlen=D, dim=1)
    args = dict(Q=Ptr(fp16), K=Ptr(fp16), V=Ptr(fp16), sm_scale=1, L=Ptr(fp32), O=Ptr(fp16),
                BS=B, HEAD=NH, SEQLEN=S, BLOCK_M=128, DIM=D, BLOCK_N=64, IS_CAUSAL=True)
    for t in "qkvo":
        args.update({f"stride_{t}_{k}": v for k, v in strides.items()})
    yield ("geak_eval", "flash_attn_fwd", fa._fwd_kernel, args, dict(num_warps=4, num_stages=4))


# --------------------------------------------------------------------------------------------


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    print(f"  wrote {path} ({os.path.getsize(path)} bytes)")


def _ptxas_check(ptx_path):
    ptxas = os.environ.get("PTXAS") or shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([ptxas, "-arch=sm_90a", ptx_path, "-o", os.path.join(d, "out.cubin")],
                           capture_output=True, text=True)
    status = "ok" if r.returncode == 0 else f"FAILED rc={r.returncode}"
    print(f"  {ptxas} -arch=sm_90a {ptx_path}: {status}")
    for line in r.stderr.splitlines():  # e.g. flash_attn_fwd's "(C7517) warpgroup.wait is injected"
        print(f"    {line}")
    return r.returncode == 0


def main():
    repo_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-root", default=repo_root, help="directory that holds tests/data (default: repo root)")
    ap.add_argument("--check", action="store_true", help="run ptxas -arch=sm_90a on each PTX afterwards")
    args = ap.parse_args()

    from importlib.metadata import version
    print(f"python {sys.version.split()[0]}, triton {triton.__version__}, "
          f"liger-kernel {version('liger-kernel')}, geak-eval {version('geak-eval')}, target {TARGET}")

    ptx_paths = []
    for package, name, fn, launch_args, opts in kernels():
        sig, consts, attrs = specialize(fn, launch_args)
        compiled = triton.compile(ASTSource(fn, sig, consts, attrs), target=TARGET, options=opts)
        md = compiled.metadata
        print(f"{package} {name}: {fn.__name__} from {fn.fn.__code__.co_filename}:{fn.fn.__code__.co_firstlineno}")
        print(f"  options {opts}; num_warps={md.num_warps}, num_stages={md.num_stages}, shared={md.shared} B")
        print(f"  signature {sig}")
        print(f"  constexprs {consts}; attrs {attrs}")
        ptx = compiled.asm["ptx"]
        assert len(ptx.encode()) < MAX_PTX_BYTES, f"{name}: PTX is {len(ptx)} bytes"
        ptx_path = os.path.join(args.out_root, "tests/data/ptx", f"triton_pkg_{package}_{name}.ptx")
        _write(ptx_path, ptx)
        _write(os.path.join(args.out_root, "tests/data/triton", f"triton_pkg_{package}_{name}.ttgir"),
               compiled.asm["ttgir"])
        ptx_paths.append(ptx_path)

    if args.check and not all([_ptxas_check(p) for p in ptx_paths]):
        sys.exit(1)


if __name__ == "__main__":
    main()

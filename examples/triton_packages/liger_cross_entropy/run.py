#!/usr/bin/env python3
"""Runs liger-kernel's cross-entropy kernel, unmodified: ``liger_cross_entropy_kernel`` of the
installed ``liger_kernel/ops/cross_entropy.py`` (liger-kernel 0.8.5), launched by the package's
own ``liger_kernel.ops.cross_entropy.cross_entropy_forward`` (what LigerCrossEntropyFunction's
forward calls) for Llama-3's vocabulary 128256: bf16 logits that require a gradient (so
HAS_GRADIENTS is on and the kernel writes the gradient over the logits), int64 targets, reduction
"mean", no class weight, softcap, z-loss, label smoothing, accuracy or predicted tokens;
BLOCK_SIZE = min(32768, next_pow2(V)) = 32768, num_warps 32 (Hopper). Two runtime loops over the
vocabulary per row: online softmax, then the gradient (a third zeroes ignored rows: none here).
One configuration, no autotuning, so Argus
can substitute its PTX. Checks the loss (relative tolerance 1e-2: the per-row losses are stored
and summed in bf16) and the gradient (max abs error at most 1e-2 of its largest magnitude)
against torch.nn.functional.cross_entropy in float32 and prints PASS; exits 77 without a CUDA
GPU, torch, triton or liger-kernel.
Usage: run.py [--reps N]   (launch the kernel N times, default 1; each on fresh logits)
"""

import sys

from argus import package_script
from argus.digest import tensor_digest

torch, triton = package_script.require_cuda()
package_script.require_package("liger_kernel", "pip install liger-kernel==0.8.5")

from liger_kernel.ops.cross_entropy import cross_entropy_forward  # noqa: E402

BT, V = 256, 128256


def main():
    reps = package_script.parse_reps(__doc__)
    package_script.print_versions("liger-kernel")
    torch.manual_seed(0)
    logits = torch.randn(BT, V, device="cuda", dtype=torch.bfloat16)
    target = torch.randint(0, V, (BT,), device="cuda")  # int64, no ignore_index entries
    for _ in range(reps):
        x = logits.clone().requires_grad_(True)  # the kernel overwrites its input with the gradient
        loss, _, _, _, grad = cross_entropy_forward(
            x, target, weight=None, ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0,
            reduction="mean", softcap=None, return_z_loss=False)
    torch.cuda.synchronize()
    # Bit-for-bit output, so a traced build's run can be compared with an untraced one.
    print(f"output digest {tensor_digest(loss, grad)}")

    ref_x = logits.float().requires_grad_(True)
    ref_loss = torch.nn.functional.cross_entropy(ref_x, target, reduction="mean")
    ref_loss.backward()
    loss, ref_loss = loss.float().item(), ref_loss.item()
    loss_err = abs(loss - ref_loss) / abs(ref_loss)
    grad_err = (grad.detach().float() - ref_x.grad).abs().max().item()
    grad_max = ref_x.grad.abs().max().item()
    if loss_err > 1e-2 or grad_err > 1e-2 * grad_max:
        print(f"FAIL: loss {loss} vs torch {ref_loss} (rel error {loss_err}, tolerance 1e-2); "
              f"gradient max abs error {grad_err} (tolerance {1e-2 * grad_max})")
        sys.exit(1)
    print(f"PASS: cross_entropy_forward BT={BT} V={V} bf16, mean, gradients: "
          f"liger_cross_entropy_kernel, {BT} CTAs; loss {loss:.4f} vs torch {ref_loss:.4f} "
          f"(rel error {loss_err:.1e}), gradient max abs error {grad_err:.2e} "
          f"(largest {grad_max:.2e})")


if __name__ == "__main__":
    main()

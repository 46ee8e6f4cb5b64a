#!/usr/bin/env python3
"""PyTorch baseline for the all-gather + GEMM overlap bench (issue 9): all-gather A over NCCL,
then one matmul, no overlap. Same problem as bench/overlap/nccl_pipeline.cu: every rank holds
M/W rows of A (M x K, FP16) and its own B (N x K); C = A_gathered · Bᵀ. One process per GPU.

    python3 torch_baseline.py M,N,K [M,N,K ...] [--reps 20]

Prints one JSON line per shape (rank 0): the slowest rank's median of all-gather + matmul, and
of each alone. The FP16 product is cast to FP32, as tma_gemm writes FP32; the cast is timed.
Each timed run starts behind a GPU sleep (torch.cuda._sleep), so that Python has enqueued the
work before the start event, as nccl_pipeline.cu does.
NVLink multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1)."""

import argparse
import json
import os
import statistics
import sys
import time

for var, value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                   ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[var] = value


def shape(text):
    try:
        m, n, k = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not M,N,K")
    return m, n, k


def run(rank, world, args, port):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, device_id=torch.device("cuda", rank))

    def slowest(ms):
        t = torch.tensor([ms], device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    def timed(body):
        times = []
        for rep in range(args.reps + args.warmup):
            dist.barrier()
            torch.cuda.synchronize()
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(200000)
            start.record()
            body()
            stop.record()
            stop.synchronize()
            if rep >= args.warmup:
                times.append(slowest(start.elapsed_time(stop)))
        return statistics.median(times) * 1e6

    for m, n, k in args.shapes:
        local = torch.randn(m // world, k, device="cuda", dtype=torch.float16)
        b = torch.randn(n, k, device="cuda", dtype=torch.float16)
        full = torch.empty(m, k, device="cuda", dtype=torch.float16)
        # Bring the clocks up as the overlap bench's back-to-back runs do: ~0.3 s of products.
        stop_at = time.monotonic() + 0.3
        while time.monotonic() < stop_at:
            for _ in range(10):
                torch.matmul(full, b.t())
            torch.cuda.synchronize()

        def gather():
            dist.all_gather_into_tensor(full, local)

        def matmul():
            torch.matmul(full, b.t()).float()

        def both():
            gather()
            matmul()

        result = {"kind": "torch_baseline", "M": m, "N": n, "K": k, "ranks": world,
                  "median_ns": timed(both), "allgather_ns": timed(gather),
                  "matmul_ns": timed(matmul), "reps": args.reps,
                  "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version()))}
        if rank == 0:
            print(json.dumps(result), flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shapes", nargs="+", type=shape, help="M,N,K (M divisible by the ranks)")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--port", type=int, default=29533)
    args = parser.parse_args()
    import torch
    import torch.multiprocessing as mp

    world = torch.cuda.device_count()
    if world < 2:
        print(f"SKIP: needs 2 or more GPUs (found {world})")
        return 77
    mp.spawn(run, args=(world, args, args.port), nprocs=world, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

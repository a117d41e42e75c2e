"""Record the two per-rank traces in ``samples/gloo_2rank/``: a 2-process gloo (CPU) DDP job.

Run with a CPU build of PyTorch (not a profview dependency), from the repository root::

    python scripts/record_gloo_job.py samples/gloo_2rank

Each rank trains a small MLP with DistributedDataParallel over the gloo backend, plus one
explicit ``all_reduce`` per step, under ``torch.profiler`` with schedule(wait=1, warmup=1,
active=3), and writes ``rank{R}.pt.trace.json.gz``.  Rank 1 sleeps before its backward pass so
that rank 0 visibly waits inside the collectives.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, record_function, schedule

STEPS = 5
WIDTH = 512


def _train(rank: int, world: int, out_dir: str) -> None:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = DistributedDataParallel(
        nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.ReLU(), nn.Linear(4 * WIDTH, WIDTH)), bucket_cap_mb=4
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = torch.randn(64, WIDTH)

    def on_trace_ready(prof: profile) -> None:
        plain = os.path.join(out_dir, f"rank{rank}.pt.trace.json")
        prof.export_chrome_trace(plain)
        with open(plain, "rb") as src, gzip.open(plain + ".gz", "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
        os.remove(plain)

    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=3),
        on_trace_ready=on_trace_ready,
        record_shapes=True,
    ) as prof:
        for _ in range(STEPS):
            with record_function("forward"):
                loss = model(data).pow(2).mean()
            if rank == 1:
                time.sleep(0.02)  # a slow rank: rank 0 waits for it in the gradient all-reduce
            with record_function("backward"):
                loss.backward()
            with record_function("optimizer"):
                optimizer.step()
                optimizer.zero_grad()
            metric = loss.detach().clone()
            dist.all_reduce(metric)  # a synchronous collective on the main thread
            prof.step()
    dist.destroy_process_group()


def main() -> None:
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    mp.spawn(_train, args=(2, out_dir), nprocs=2, join=True)


if __name__ == "__main__":
    main()

"""Write ``samples/nccl_p2p_2rank/``: two ranks of a 4-rank NCCL pipeline job whose point-to-point
calls name their peers, as PyTorch writes them (no shared trace records ``Src Rank``/``Dst Rank``).

Every event has the fields and argument layout of the real NCCL 2.27 trace in
``samples/tracelens_b200_nccl_eager_no_steps.json.gz`` (``record_param_comms`` with its collective
arguments, ``cuLaunchKernelEx``, the ``ncclDevKernel_SendRecv`` kernel carrying the same arguments,
the ``ac2g`` flow pair), plus the peer fields ``torch/csrc/profiler/util.cpp`` (``saveNcclMeta``)
adds: a ``send`` names its ``Dst Rank``, a ``recv`` its ``Src Rank`` (global ranks).

Per step (three ``ProfilerStep``): rank 1 first receives from rank 2 (not in the sample), then rank
0 sends to rank 1, then rank 1 sends back to rank 0.  By stream order rank 0's first call would pair
with rank 1's receive from rank 2; by peer, each send pairs with the receive that names its sender.

Usage: python scripts/make_p2p_sample.py samples/nccl_p2p_2rank
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

BASE = 1365627949000.0
KERNEL = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
ELEMS = 524288
STEP_US = 2000.0
#: Per step, each rank's calls: (collective, peer, start offset µs, kernel duration µs).
PLAN = {
    0: [("send", 1, 300.0, 61.5), ("recv", 1, 900.0, 77.625)],
    1: [("recv", 2, 100.0, 40.75), ("recv", 0, 280.0, 101.0), ("send", 0, 905.0, 53.125)],
}


def _meta(pid: int, tid: int, name: str, value: object) -> dict:
    key = {"process_name": "name", "process_labels": "labels", "thread_name": "name"}.get(name, "sort_index")
    return {"name": name, "ph": "M", "ts": BASE, "pid": pid, "tid": tid, "args": {key: value}}


def _comm_args(collective: str, peer: int, rank: int) -> dict:
    peer_key = "Dst Rank" if collective == "send" else "Src Rank"
    return {
        "Collective name": collective,
        "In msg nelems": ELEMS,
        "Out msg nelems": ELEMS,
        "Group size": 4,
        "dtype": "BFloat16",
        "In split size": "[]",
        "Out split size": "[]",
        "Process Group Name": "0",
        "Process Group Description": "default_pg",
        "Process Group Ranks": "[0, 1, 2, 3]",
        peer_key: peer,
    }


def rank_trace(rank: int) -> dict:
    pid, tid = 6583 + rank, 6583 + rank
    events = [
        _meta(pid, 0, "process_name", "python3"),
        _meta(pid, 0, "process_labels", "CPU"),
        _meta(0, 0, "process_name", "python3"),
        _meta(0, 0, "process_labels", f"GPU {rank}"),
        _meta(0, 7, "thread_name", "stream 7 "),
    ]
    external, correlation = 4800, 15200
    for step in range(3):
        begin = BASE + step * STEP_US
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step + 2}", "pid": pid, "tid": tid,
             "ts": begin, "dur": STEP_US - 50.0, "args": {"External id": external, "Record function id": 0}}
        )  # fmt: skip
        external += 1
        for collective, peer, offset, duration in PLAN[rank]:
            start = begin + offset
            args = _comm_args(collective, peer, rank)
            host = {
                "External id": external, "Record function id": 0, "Collective name": collective,
                "Process Group Description": "default_pg", "dtype": "BFloat16", "Rank": peer,
                "Out msg nelems": ELEMS, "Process Group Name": "0", "Global rank stride": 1,
                "Out split size": "[]", "In split size": "[]", "Process Group Ranks": "[0, 1, 2, 3]",
                "Group size": 4, "Global rank start": 0, "In msg nelems": ELEMS,
                ("Dst Rank" if collective == "send" else "Src Rank"): peer,
            }  # fmt: skip
            events.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": pid, "tid": tid,
                           "ts": start, "dur": 95.25, "args": host})  # fmt: skip
            launch = start + 12.5
            events.append({"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": pid, "tid": tid,
                           "ts": launch, "dur": 20.094,
                           "args": {"External id": external, "cbid": 652, "correlation": correlation}})  # fmt: skip
            gpu_start = launch + 21.0 if collective == "send" or peer == 2 else launch + 1.5
            kernel_args = {
                "External id": external, "queued": 0, "device": rank, "context": 1, "stream": 7,
                "correlation": correlation, "registers per thread": 96, "shared memory": 103808,
                "blocks per SM": 0.074324, "warps per SM": 1.189189, "grid": [1, 1, 1], "block": [640, 1, 1],
                "est. achieved occupancy %": 0, **args,
            }  # fmt: skip
            events.append({"ph": "X", "cat": "kernel", "name": KERNEL, "pid": 0, "tid": 7, "ts": gpu_start,
                           "dur": duration, "args": kernel_args})  # fmt: skip
            events.append({"ph": "s", "id": correlation, "pid": pid, "tid": tid, "ts": launch, "cat": "ac2g",
                           "name": "ac2g"})  # fmt: skip
            events.append({"ph": "f", "id": correlation, "pid": 0, "tid": 7, "ts": gpu_start, "cat": "ac2g",
                           "name": "ac2g", "bp": "e"})  # fmt: skip
            external += 1
            correlation += 1
    return {
        "schemaVersion": 1,
        "deviceProperties": [
            {
                "id": rank,
                "name": "NVIDIA B200",
                "totalGlobalMem": 191537348608,
                "computeMajor": 10,
                "computeMinor": 0,
                "numSms": 148,
            }
        ],
        "distributedInfo": {
            "backend": "nccl",
            "rank": rank,
            "world_size": 4,
            "pg_count": 1,
            "pg_config": [
                {
                    "pg_name": "0",
                    "pg_desc": "default_pg",
                    "backend_config": "cuda:nccl",
                    "pg_size": 4,
                    "ranks": [0, 1, 2, 3],
                }
            ],
            "nccl_version": "2.27.5",
        },
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1759300000000000000,
        "traceEvents": events,
        "traceName": f"rank{rank}.pt.trace.json",
    }


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "samples/nccl_p2p_2rank")
    out.mkdir(parents=True, exist_ok=True)
    for rank in PLAN:
        (out / f"rank{rank}.pt.trace.json").write_text(json.dumps(rank_trace(rank), indent=0) + "\n")
        print(f"wrote {out / f'rank{rank}.pt.trace.json'}")


if __name__ == "__main__":
    main()

"""Point-to-point calls matched across ranks by the peer each side names, never by stream order.

Sample: ``samples/nccl_p2p_2rank/`` (two ranks of a 4-rank NCCL job, written by
``scripts/make_p2p_sample.py`` in the argument layout of the real NCCL 2.27 trace
``samples/tracelens_b200_nccl_eager_no_steps.json.gz``, with the ``Dst Rank`` of a send and the
``Src Rank`` of a recv that PyTorch's ``saveNcclMeta`` writes: no shared trace records them).
Witness: the raw JSON read with ``json``, each send paired with the receive that names its sender
by a plain loop over the kernels in time order.
"""

from __future__ import annotations

import json
from collections import defaultdict

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from support import SAMPLES

from profview.analysis.distributed.collectives import match_counts
from profview.jobs.job import open_job
from profview.parsers import chrome_trace, fast_chrome

P2P = SAMPLES / "nccl_p2p_2rank"
RANKS = (0, 1)


def _raw_kernels(rank: int) -> list[dict]:
    with open(P2P / f"rank{rank}.pt.trace.json") as fh:
        events = json.load(fh)["traceEvents"]
    return sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])


def _raw_pairs() -> tuple[list[tuple[dict, dict]], list[dict]]:
    """(send, recv) kernel pairs where the send names the receiver and the recv the sender, the
    n-th send of a channel with its n-th recv; and the calls whose peer has no call here."""
    sends: dict[tuple[int, int], list[dict]] = defaultdict(list)
    recvs: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for rank in RANKS:
        for kernel in _raw_kernels(rank):
            args = kernel["args"]
            if "Dst Rank" in args:
                sends[(rank, args["Dst Rank"])].append(kernel)
            if "Src Rank" in args:
                recvs[(args["Src Rank"], rank)].append(kernel)
    pairs = [p for channel in sends for p in zip(sends[channel], recvs.get(channel, []), strict=False)]
    paired = {id(k) for pair in pairs for k in pair}
    alone = [k for group in (*sends.values(), *recvs.values()) for k in group if id(k) not in paired]
    return pairs, alone


@pytest.fixture(scope="module")
def view() -> pl.DataFrame:
    job = open_job([str(P2P / f"rank{r}.pt.trace.json") for r in RANKS], workers=1, use_cache=False)
    frame = job.collectives()
    job.close()
    return frame


def test_sends_and_recvs_are_matched_only_where_both_sides_name_each_other(view: pl.DataFrame) -> None:
    pairs, alone = _raw_pairs()
    assert (len(pairs), len(alone)) == (6, 3)  # rank 1's receives from rank 2 have no other side here
    assert match_counts(view) == {"peer": 2 * len(pairs), "peer_unseen": len(alone)}
    matched = view.filter(pl.col("ranks") == 2)
    assert not view["mismatch"].any()  # a send and its recv are one transfer, not a name mismatch
    # each instance: one send on its sender, the recv on its receiver, the raw waits (one host clock)
    got = sorted(
        tuple(sorted(zip(g["name"].to_list(), g["rank"].to_list(), g["wait_us"].to_list(), strict=True)))
        for _, g in matched.group_by("collective")
    )
    expected = []
    for send, recv in pairs:
        latest = max(send["ts"], recv["ts"])
        rows = [
            ("Send", send["args"]["device"], latest - send["ts"]),
            ("Recv", recv["args"]["device"], latest - recv["ts"]),
        ]
        expected.append(tuple(sorted(rows)))
    assert got == sorted(expected)
    for _, group in matched.group_by("collective"):  # no wait longer than the waiting rank's call
        assert (group["wait_us"] <= group["duration_us"] + 1.0).all()
    # stream order would have paired rank 0's first send with rank 1's first call, its receive from rank 2
    first_recv = _raw_kernels(1)[0]
    assert first_recv["args"]["Src Rank"] == 2
    unseen = view.filter(pl.col("match") == "peer_unseen")
    assert (unseen["rank"] == 1).all() and unseen["wait_us"].null_count() == unseen.height


def test_the_summary_says_what_the_peers_matched() -> None:
    from profview.report.job_summary import matching_line

    job = open_job([str(P2P / f"rank{r}.pt.trace.json") for r in RANKS], workers=1, use_cache=False)
    line = matching_line(job) or ""
    instances = job.collective_instances()
    job.close()
    assert "6 matched across ranks (12 calls: 12 by the peer each side names)" in line
    assert "3 point-to-point whose peer's call is not in the job" in line
    assert set(instances["name"]) == {"Recv/Send"} and instances.height == 6


@pytest.mark.skipif(not fast_chrome.available(), reason="the compiled scanner was not built")
@pytest.mark.parametrize("rank", RANKS)
def test_both_readers_read_the_peer_fields(rank: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = (P2P / f"rank{rank}.pt.trace.json").read_bytes()
    fast = chrome_trace.parse_chrome_trace(bytearray(data), "trace.json").events
    with monkeypatch.context() as patch:
        patch.setattr(chrome_trace, "scan_fast", lambda *_args: None)
        general = chrome_trace.parse_chrome_trace(bytearray(data), "trace.json").events
    assert_frame_equal(fast, general)
    raw = [e for e in json.loads(data)["traceEvents"] if e.get("ph") == "X"]
    for column, key in (("src_rank", "Src Rank"), ("dst_rank", "Dst Rank")):
        named = sorted(e["args"][key] for e in raw if key in e.get("args", {}))
        assert sorted(fast[column].drop_nulls().to_list()) == named and named

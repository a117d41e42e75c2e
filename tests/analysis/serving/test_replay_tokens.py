"""Tokens of a graph-replayed decode iteration, from the embedding call recorded while the graph
was captured: ``samples/h100_decode_cuda_graph.json.gz`` (one in-trace capture recording
``aten::embedding [[2048, 256], [4, 1]]``, then 12 decode iterations of one cudaGraphLaunch each,
which call no embedding themselves).  The second witness is the raw JSON: the capture's
BeginCapture/EndCapture range, the embedding inside it, and each iteration's GPU time summed
from the events its launches' correlations name.
"""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
from support import loaded, raw_events, sample

from profview.analysis.diff.phases import diff_phases

SAMPLE = "h100_decode_cuda_graph.json.gz"


def _captured_tokens() -> tuple[int, int]:
    """The element count of the captured embedding's index tensor and its first dimension."""
    events = sorted((e for e in raw_events(SAMPLE) if e.get("ph") == "X"), key=lambda e: e["ts"])
    begin = next(e for e in events if e["name"] == "cudaStreamBeginCapture")
    end = next(e for e in events if e["name"] == "cudaStreamEndCapture" and e["ts"] > begin["ts"])
    embedding = next(
        e for e in events if e["name"] == "aten::embedding" and begin["ts"] <= e["ts"] <= end["ts"] + end["dur"]
    )
    shape = embedding["args"]["Input Dims"][1]
    assert shape == [4, 1] and "long" in embedding["args"]["Input type"][1]
    return math.prod(shape), shape[0]


def test_replayed_decode_iterations_take_their_tokens_from_the_capture() -> None:
    tokens, batch = _captured_tokens()
    facts = json.loads(sample("h100_decode_cuda_graph.facts.json").read_text())
    assert tokens == batch == facts["batch"]  # one new token per request per decode iteration
    iterations = loaded(SAMPLE).iterations()
    decode = iterations.filter(pl.col("phase") == "decode")
    assert decode.height == 12 and (decode["graph_launches"] == 1).all()
    assert decode["tokens"].to_list() == [tokens] * 12
    assert set(decode["tokens_from"]) == {"capture"}
    assert decode["gpu_us_per_token"].to_list() == pytest.approx((decode["gpu_us"] / tokens).to_list(), abs=1e-3)


def test_per_token_phase_figures_and_their_diff_work_on_replays() -> None:
    phases = loaded(SAMPLE).phases()
    decode = phases.filter(pl.col("phase") == "decode").row(0, named=True)
    assert decode["gpu_us_per_token"] is not None and decode["gpu_us_per_token"] > 0
    compared = diff_phases(phases, phases).filter(pl.col("name") == "decode")
    assert compared["compared"].to_list() == ["gpu_us_per_token"]

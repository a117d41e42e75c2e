"""A graph's nodes table says what its inferred ``block`` labels are: how many repeats of how many
nodes, which nodes they span, how many lie outside, and that a repeat may hold more than one layer
or start mid-layer.  Witness: the capture's ``Qwen3DecoderLayer`` frames in the raw JSON (SGLang's
Qwen3-8B: one repeat per decoder layer) and the graph's node count from its replay."""

from __future__ import annotations

import re

from graph_witness import read, replays
from pilot import open_graph_nodes, screen_text, wait_loaded
from support import SAMPLES, viewer

REPLAY = "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
CAPTURE = SAMPLES / "sglang_decode_capture_traces" / "bs_32_rank0.json.gz"


async def test_graph_nodes_caption_says_what_the_blocks_are() -> None:
    layers = {
        e["name"]
        for e in read(CAPTURE)
        if str(e.get("name", "")).startswith("nn.Module: Qwen3DecoderLayer_") and e.get("ph") == "X"
    }
    nodes = len(replays(read(SAMPLES / REPLAY))[0])
    app = viewer(REPLAY)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await open_graph_nodes(pilot, app)
        text = " ".join(screen_text(app).split())
    found = re.search(
        r"block k/(\d+): the k-th of \1 back-to-back repeats of the same (\d+) kernel names "
        r"\(nodes (\d+)–(\d+), (\d+) nodes outside unlabelled\), inferred from the names alone: "
        r"a repeat may hold more than one layer, or start mid-layer",
        text,
    )
    assert found, text[:600]
    count, period, first, last, outside = (int(found[i]) for i in range(1, 6))
    assert count == len(layers) == 36
    assert last - first + 1 == count * period and outside == nodes - count * period

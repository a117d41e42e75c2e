"""The Overview's device and MFU lines say what they infer: a device the GPU work ran on that
``deviceProperties`` does not list is named as inferred (and from what), and a trace whose sized
FLOPs are a small share of its GPU time (a graph replay with no capture) gets no MFU against the
peak of the precision those few rows happen to have."""

from __future__ import annotations

import gzip
import io
import json
import re
from collections import Counter

from rich.console import Console
from support import loaded, sample

from profview.tui.main.overview import overview_renderable

SGLANG_MI300 = "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
MI250 = "hta_mi250_rocm_minitoy.json.gz"
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def trace(name: str) -> dict:
    with gzip.open(sample(name), "rt") as fh:
        return json.load(fh)


def overview_text(name: str) -> str:
    console = Console(width=400, file=io.StringIO(), record=True)
    console.print(overview_renderable(loaded(name), 400))
    return console.export_text()


def test_an_unlisted_device_is_named_as_inferred_and_from_what() -> None:
    data = trace(SGLANG_MI300)
    listed = {d["id"]: d["name"] for d in data["deviceProperties"]}
    used = Counter(e["args"]["device"] for e in data["traceEvents"] if e.get("cat") in GPU_CATS)
    busiest = used.most_common(1)[0][0]
    assert busiest not in listed and list(listed) == [0]  # the witness: the raw file's two numberings
    lines = loaded(SGLANG_MI300).efficiency_lines()
    expected = (
        f"device inferred: the GPU work ran on device {busiest}, which deviceProperties does not list; "
        f"the only device it lists is 0: {listed[0]}"
    )
    assert expected in lines
    text = overview_text(SGLANG_MI300)
    assert "device: not recorded in this trace" not in text and text.count(expected) == 1


def test_no_mfu_where_the_sized_rows_hold_little_of_the_gpu_time() -> None:
    data = trace(SGLANG_MI300)
    events = data["traceEvents"]
    graph_launches = {
        e["args"]["correlation"] for e in events if e.get("cat") == "cuda_runtime" and "GraphLaunch" in e["name"]
    }
    gpu = [e for e in events if e.get("cat") in GPU_CATS]
    replayed_pct = sum(e["dur"] for e in gpu if e["args"].get("correlation") in graph_launches) / sum(
        e["dur"] for e in gpu
    ) * 100
    assert replayed_pct > 90  # the witness: most GPU time is one replay, which no capture sizes
    line = next(line for line in loaded(SGLANG_MI300).efficiency_lines() if line.startswith("model FLOPs"))
    assert "% of the" not in line and "fp32 peak" not in line
    found = re.search(r"\(no MFU: the sized rows, fp32, hold ([0-9.]+)% of GPU time; ([0-9.]+)% is unsized", line)
    assert found, line
    sized, unsized = float(found[1]), float(found[2])
    assert sized <= 100 - replayed_pct + 0.05 and unsized >= replayed_pct - 0.05


def test_a_listed_device_is_not_called_inferred() -> None:
    data = trace(MI250)
    listed = {d["id"] for d in data["deviceProperties"]}
    used = {e["args"]["device"] for e in data["traceEvents"] if e.get("cat") in GPU_CATS}
    assert used <= listed
    profile = loaded(MI250)
    assert profile.device_inference() is None
    assert not any("inferred" in line for line in profile.efficiency_lines())


def test_the_steps_view_gives_no_mfu_where_the_overview_gives_none() -> None:
    profile = loaded(SGLANG_MI300)
    assert any("(no MFU:" in line for line in profile.efficiency_lines())
    assert profile.step_efficiency()["mfu_pct"].is_null().all()
    assert profile.step_efficiency(peak_tflops=100.0)["mfu_pct"].is_not_null().all()  # a peak given rates it

"""Graph replays from the command line: ``export --view graphs|graph_nodes|graph_ops [--capture PATH]``,
and one line with a non-zero exit for what cannot be done."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from graph_witness import captured_launches, read, replays
from support import SAMPLES, run_cli

from profview.profiles.graph_views import NO_GRAPHS

REPLAY = SAMPLES / "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
FOLDER = SAMPLES / "sglang_decode_capture_traces"
COMPILED = SAMPLES / "h100_compile_reduce_overhead.json.gz"


def export(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, str]], str]:
    code = run_cli(["export", *args, "-o", "-", "--no-cache"])
    out, err = capsys.readouterr()
    return code, list(csv.DictReader(io.StringIO(out))) if code == 0 else [], err


def test_graphs_and_nodes_through_a_capture_folder(capsys: pytest.CaptureFixture[str]) -> None:
    code, graphs, _err = export(capsys, str(REPLAY), "--view", "graphs", "--capture", str(FOLDER))
    assert code == 0
    events = read(REPLAY)
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    replayed = replays(events)[0]
    assert [(g["nodes"], g["replays"], g["capture"]) for g in graphs] == [
        (str(len(replayed)), "1", "capture_32_DECODE")
    ]
    share = sum(e["dur"] for e in replayed) / sum(e["dur"] for e in gpu) * 100.0
    assert float(graphs[0]["pct_of_gpu"]) == pytest.approx(share, abs=0.0005)  # 98.75%
    assert float(graphs[0]["attributed_pct"]) == 100.0
    code, nodes, _err = export(capsys, str(REPLAY), "--view", "graph_nodes", "--graph", "0", "--capture", str(FOLDER))
    assert code == 0
    launches = captured_launches(read(FOLDER / "bs_32_rank0.json.gz"))
    assert [n["name"] for n in nodes] == [call["args"]["kernel"] for call in launches]


def test_graph_ops_without_a_capture_keeps_every_microsecond(capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, _err = export(capsys, str(REPLAY), "--view", "graph_ops")
    assert code == 0
    gpu = sum(e["dur"] for e in read(REPLAY) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    assert sum(float(r["device_us"]) for r in rows) == pytest.approx(gpu, abs=0.001 * len(rows))
    replayed = sum(e["dur"] for e in replays(read(REPLAY))[0])
    (unattributed,) = [r for r in rows if r["name"] == "(graph replay, not attributed)"]
    assert float(unattributed["graph_us"]) == pytest.approx(replayed, abs=0.001)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--view", "graphs", "--capture", "no/such/capture.json"], "--capture: no/such/capture.json: no such file"),
        (["--view", "graphs", "--capture", str(SAMPLES / "gpt2_train_bf16.pt.trace.json.gz")], "no graph capture"),
        (["--view", "kernels", "--graph", "0"], "--graph goes with --view graph_nodes"),
        (["--view", "graph_nodes", "--graph", "7"], "no graph 7"),
    ],
)
def test_what_cannot_be_done_is_one_line(capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    code, _rows, err = export(capsys, str(REPLAY), *args)
    assert code == 2
    assert says in err
    assert err.count("\n") == 1


def test_a_trace_without_graphs_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, _rows, err = export(capsys, str(SAMPLES / "gpt2_train_bf16.pt.trace.json.gz"), "--view", "graphs")
    assert code == 2
    assert NO_GRAPHS in err


def test_a_capture_folder_listing_a_missing_file_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "execution_details.json").write_text('[{"file": "bs_8_rank0.json.gz", "batch_size": 8}]')
    code, _rows, err = export(capsys, str(COMPILED), "--view", "graphs", "--capture", str(tmp_path))
    assert code == 2
    assert "bs_8_rank0.json.gz" in err
    assert "listed in execution_details.json but not there" in err

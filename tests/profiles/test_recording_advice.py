"""Why a view is empty, with advice that fits the profiler that wrote the trace: PyTorch's option
for a Kineto trace, never ``record with torch.profiler`` told about a JAX/XLA trace.  Witness: the
raw events read with the standard library (no ``cat``, no memory events, no input shapes: what
makes each view empty)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import raw_events, run_cli, sample

import profview
from profview.errors import ProfviewError

XLA = "xla_style_trace.json"
DDP = "ddp_nccl_streams.pt.trace.json.gz"


def problem(profile: profview.Profile, view: str) -> str:
    with pytest.raises(ProfviewError) as caught:
        getattr(profile, view)()
    return caught.value.problem


def test_a_jax_trace_is_not_told_to_record_with_torch() -> None:
    events = raw_events(XLA)
    assert not any("cat" in e for e in events if e.get("ph") == "X")  # JAX/XLA's shape: no categories
    assert not any(e.get("name") == "[memory]" for e in events)
    assert not any("Input Dims" in (e.get("args") or {}) for e in events)
    profile = profview.load(sample(XLA), use_cache=False)
    for view in ("memory", "modules", "sources", "efficiency", "step_paths"):
        said = problem(profile, view)
        assert "record with" not in said and "torch.profiler.profile(" not in said, said
        assert "a JAX/XLA/TensorFlow trace: profview reads this from PyTorch's" in said, said


def test_the_summary_of_a_jax_trace_gives_no_torch_remedy(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["summary", str(sample(XLA))]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "model FLOPs: none" in out and "JAX/XLA/TensorFlow trace: profview reads this" in out
    assert "record with torch" not in out


def test_a_pytorch_trace_keeps_its_torch_remedy() -> None:
    events = raw_events(DDP)
    assert not any(e.get("name") == "[memory]" for e in events)  # recorded without profile_memory
    said = problem(profview.load(sample(DDP), use_cache=False), "memory")
    assert said.endswith("(record with torch.profiler.profile(profile_memory=True))"), said


def test_an_nsys_export_without_shapes_is_told_emit_nvtx(shared_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A PyTorch run under nsys whose emit_nvtx ranges carry no ``sizes = [...]`` (by sqlite3): the
    remedy is emit_nvtx's own option, which nsys records, not torch.profiler's."""
    import sqlite3

    path = shared_dir / "formats/nsys/nsysai__mfu_2gpu_before.sqlite"
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as db:
        texts = [row[0] for row in db.execute("SELECT text FROM NVTX_EVENTS WHERE text IS NOT NULL")]
    assert texts and not any("sizes = [" in text for text in texts)
    assert run_cli(["summary", str(path), "--no-cache"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "model FLOPs: none" in out
    remedy = "record under nsys with torch.autograd.profiler.emit_nvtx(record_shapes=True)"
    assert f"an Nsight Systems export: {remedy}" in out

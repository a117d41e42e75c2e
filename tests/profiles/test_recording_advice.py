"""Why a view is empty, with advice that fits the profiler that wrote the trace: PyTorch's option
for a Kineto trace, never ``record with torch.profiler`` told about a JAX/XLA trace.  Witness: the
raw events read with the standard library (no ``cat``, no memory events, no input shapes: what
makes each view empty)."""

from __future__ import annotations

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

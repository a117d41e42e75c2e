"""Iterations of serving and decode loops, each figure recomputed from the raw JSON.

The witness is ``tests/serving_witness.py`` (the raw events read with the standard library); the
recordings' own facts (``samples/h100_*.facts.json``) are a third source where they say a count.
"""

from __future__ import annotations

import math
import statistics

import polars as pl
import pytest
from serving_witness import B200, EAGER, GPT2, GPU_CATS, GRAPH, SGLANG, VLLM, facts, raw_iterations, union_in
from support import loaded, raw_events


def test_vllm_decode_replay_is_one_iteration_holding_all_gpu_time() -> None:
    """TraceLens' vLLM replay: one decode iteration of 32 tokens holding all 10,717.708 GPU µs
    (the hipGraphLaunch's 421 replayed events included, though they ran after the host range)."""
    table = loaded(VLLM).iterations()
    (row,) = table.iter_rows(named=True)
    (raw,) = raw_iterations(VLLM, lambda n: n.startswith("execute_"))
    all_gpu = sum(e["dur"] for e in raw_events(VLLM) if e.get("cat") in GPU_CATS)
    assert row["found_by"] == "annotation" and row["phase"] == "decode"
    assert (row["requests"], row["tokens"], row["context_tokens"]) == (32, 32, 55086)  # the name's numbers
    assert row["tokens_from"] == "annotation"
    assert row["gpu_us"] == pytest.approx(raw["gpu_us"], abs=1e-3) == pytest.approx(10717.708, abs=1e-3)
    assert raw["gpu_us"] == pytest.approx(all_gpu, abs=1e-6)
    assert row["kernels"] == raw["kernels"] == 425
    assert row["graph_launches"] == raw["graph_launches"] == 1
    assert row["host_us"] == pytest.approx(raw["host_us"], abs=1e-3)
    assert row["wall_us"] == pytest.approx(raw["gpu_end"] - raw["ts"], abs=1e-3)  # GPU work outlasts the host range
    assert row["gpu_us_per_token"] == pytest.approx(raw["gpu_us"] / 32, abs=1e-3)


def test_sglang_replay_step_is_inside_its_execute_iteration() -> None:
    """SGLang's replay: ``step[DECODE bs=32]`` lies inside an ``execute_…`` range of the same thread;
    the iteration is the outer range (its GPU work includes what was launched around the step)."""
    table = loaded(SGLANG).iterations()
    (row,) = table.iter_rows(named=True)
    both = raw_iterations(SGLANG, lambda n: n.startswith(("execute_", "step[")))
    (step,) = [r for r in raw_iterations(SGLANG, lambda n: n.startswith("step[")) if r]
    assert len(both) == 1 and both[0]["name"] == row["name"] and row["name"].startswith("execute_32_context_0")
    assert step["name"] == "step[DECODE bs=32]" and step["gpu_us"] < both[0]["gpu_us"]
    assert (row["phase"], row["requests"], row["tokens"], row["context_tokens"]) == ("decode", 32, 32, 32785)
    assert row["gpu_us"] == pytest.approx(both[0]["gpu_us"], abs=1e-3) == pytest.approx(9778.614, abs=1e-3)
    assert row["kernels"] == both[0]["kernels"] and row["graph_launches"] == both[0]["graph_launches"] == 1


def test_eager_kv_loop_prefill_then_decode_with_tokens_from_the_embedding() -> None:
    """The H100 eager KV-cache loop: a prefill of 4 × 32 tokens then 12 decode iterations of 4 × 1,
    tokens from each iteration's embedding call (the annotations carry no numbers)."""
    table = loaded(EAGER).iterations()
    raw = raw_iterations(EAGER, lambda n: n in ("prefill", "decode"))
    recipe = facts(EAGER)
    assert table["phase"].to_list() == ["prefill"] + ["decode"] * recipe["decode_iterations"]
    assert table["tokens"].to_list() == [r["tokens"] for r in raw]
    assert table["tokens"].to_list() == [recipe["prefill_tokens"]] + [recipe["decode_tokens_each"]] * 12
    assert set(table["tokens_from"].to_list()) == {"embedding"}
    assert table["gpu_us"].to_list() == pytest.approx([r["gpu_us"] for r in raw], abs=1e-3)
    assert table["kernels"].to_list() == [r["kernels"] for r in raw]
    assert table["host_us"].to_list() == pytest.approx([r["host_us"] for r in raw], abs=1e-3)
    assert table["graph_launches"].sum() == recipe["graph_launch_calls"] == 0
    assert table["step"].null_count() == table.height  # torch 2.11 wrote no ProfilerStep here


def test_cuda_graph_loop_counts_each_replay_in_its_decode_iteration() -> None:
    """The same loop replaying a captured CUDA graph: each decode iteration launches one graph whose
    kernels all count in it; the capture is no iteration; a replay runs no embedding on the host, so
    its tokens are unknown rather than invented."""
    table = loaded(GRAPH).iterations()
    raw = raw_iterations(GRAPH, lambda n: n in ("prefill", "decode"))
    recipe = facts(GRAPH)
    decode = table.filter(pl.col("phase") == "decode")
    assert "capture_decode_bs4" not in table["name"].to_list()
    assert decode.height == recipe["decode_iterations"] == recipe["graph_replays"]
    assert decode["graph_launches"].to_list() == [1] * 12
    assert table["graph_launches"].sum() == recipe["graph_launch_calls"]
    assert table["kernels"].to_list() == [r["kernels"] for r in raw]
    assert table["gpu_us"].to_list() == pytest.approx([r["gpu_us"] for r in raw], abs=1e-3)
    # no embedding in a replayed iteration: its tokens come from the capture's (test_replay_tokens.py)
    assert [r["tokens"] for r in raw[1:]] == [None] * 12 and set(decode["tokens_from"]) == {"capture"}
    assert decode["gpu_us_per_token"].null_count() == 0


def test_vllm_native_prefill_tokens_agree_with_its_embedding() -> None:
    """``execute_context_1(888_788544)_generation_0(0)``: one prefill request of 888 tokens (888² =
    788544), as many as the iteration's embedding call looks up."""
    (row,) = loaded(B200).iterations().iter_rows(named=True)
    (raw,) = raw_iterations(B200, lambda n: n.startswith("execute_"))
    assert (row["phase"], row["requests"], row["tokens"], row["tokens_from"]) == ("prefill", 1, 888, "annotation")
    assert raw["tokens"] == 888 == 888**2 // 888 and 888**2 == 788544
    assert row["gpu_us"] == pytest.approx(raw["gpu_us"], abs=1e-3)


def test_training_steps_are_iterations_of_unknown_phase_without_tokens() -> None:
    """gpt2 training: no serving annotation, nothing repeated inside a step: every iteration is a
    ProfilerStep, of unknown phase and without tokens, though the steps call aten::embedding."""
    table = loaded(GPT2).iterations()
    raw = raw_iterations(GPT2, lambda n: n.startswith("ProfilerStep#"))
    assert set(table["found_by"].to_list()) == {"steps"} and set(table["phase"].to_list()) == {"unknown"}
    assert table["name"].to_list() == [r["name"] for r in raw]
    assert table["step"].to_list() == [int(r["name"].split("#")[1]) for r in raw]
    assert table["tokens"].null_count() == table.height and all(r["tokens"] for r in raw)  # embedding there, unused
    assert table["gpu_us"].to_list() == pytest.approx([r["gpu_us"] for r in raw], abs=1e-3)
    steps = loaded(GPT2).steps()
    assert table["wall_us"].to_list() == pytest.approx(steps["duration_us"].to_list(), abs=1e-3)  # the steps' windows


def test_gpu_busy_is_the_union_of_gpu_work_in_the_window() -> None:
    """gpu_busy_pct and idle_us of the eager loop's iterations: the union of the GPU events each
    iteration launched, inside its window (its start to the later of its host end and its GPU
    work's end)."""
    table = loaded(EAGER).iterations()
    raw = raw_iterations(EAGER, lambda n: n in ("prefill", "decode"))
    for row, it in zip(table.iter_rows(named=True), raw, strict=True):
        lo, hi = it["ts"], max(it["ts"] + it["host_us"], it["gpu_end"] or -math.inf)
        busy = union_in(it["intervals"], lo, hi)
        assert row["wall_us"] == pytest.approx(hi - lo, abs=1e-3)
        assert row["idle_us"] == pytest.approx(hi - lo - busy, abs=1e-3)
        assert row["gpu_busy_pct"] == pytest.approx(busy / (hi - lo) * 100, abs=0.01)


def test_busy_and_idle_count_the_work_gpu_us_counts() -> None:
    """gpt2_train_bf16's first step: its window also holds 355 GPU events queued before the profiled
    steps (no launch in the trace), which gpu_us leaves out; busy counted it (90.02% of a row whose
    gpu_us is 75.37% of its wall).  Busy and idle now count the work the row launched: each row's
    busy time (wall − idle) is the union of its own GPU events in its window, never above gpu_us."""
    table = loaded(GPT2).iterations()
    raw = raw_iterations(GPT2, lambda n: n.startswith("ProfilerStep#"))
    reach = -math.inf
    for row, it in zip(table.iter_rows(named=True), raw, strict=True):
        lo = max(it["ts"], reach)  # the windows do not overlap: the steps' rule
        hi = reach = lo + row["wall_us"]
        busy = union_in(it["intervals"], lo, hi)
        assert row["gpu_us"] == pytest.approx(it["gpu_us"], abs=1e-3)
        assert row["wall_us"] - row["idle_us"] == pytest.approx(busy, abs=2e-3)
        assert row["gpu_busy_pct"] == pytest.approx(busy / row["wall_us"] * 100, abs=0.01)
        assert busy <= it["gpu_us"] + 1e-6 and row["wall_us"] - row["idle_us"] <= row["gpu_us"] + 1e-3
    first = table.row(0, named=True)
    assert round(first["gpu_us"] / first["wall_us"] * 100, 1) == 75.4 and first["gpu_busy_pct"] < 75.4


def test_the_slow_first_decode_is_an_outlier_of_its_phase() -> None:
    """Outliers per phase: the first decode iteration (804.8 ms: the warm-up) stands out of the 12."""
    table = loaded(EAGER).iterations()
    walls = [r["host_us"] for r in raw_iterations(EAGER, lambda n: n == "decode")]
    median = statistics.median(walls)
    limit = max(median + 3 * 1.4826 * statistics.median(abs(w - median) for w in walls), 1.05 * median)
    expected = [False] + [w > limit for w in walls]  # the prefill is alone in its phase: no spread
    assert table["outlier"].to_list() == expected and expected[1] and sum(expected) == 1


def test_phases_of_the_eager_loop() -> None:
    """Per phase: iterations, tokens, GPU µs per token = Σ GPU µs ÷ Σ tokens, medians, host-bound."""
    phases = loaded(EAGER).phases()
    raw = raw_iterations(EAGER, lambda n: n == "decode")
    decode = phases.filter(pl.col("phase") == "decode").row(0, named=True)
    assert phases["phase"].to_list() == ["prefill", "decode"]
    assert (decode["iterations"], decode["tokens"], decode["tokens_known"]) == (12, 48, 12)
    assert decode["gpu_us"] == pytest.approx(sum(r["gpu_us"] for r in raw), abs=1e-3)
    assert decode["gpu_us_per_token"] == pytest.approx(sum(r["gpu_us"] for r in raw) / 48, abs=1e-3)
    assert decode["median_host_us"] == pytest.approx(statistics.median(r["host_us"] for r in raw), abs=1e-3)
    assert decode["median_gpu_us"] == pytest.approx(statistics.median(r["gpu_us"] for r in raw), abs=1e-3)
    assert decode["bound"] == "host-bound" and decode["median_gpu_busy_pct"] < 5
    assert decode["kv_points"] is None  # plain annotations give no context lengths


def test_kv_growth_line_is_the_least_squares_line() -> None:
    """The KV-growth fit against the closed form (statistics.linear_regression); the points are the
    eager loop's decode GPU times against a context length growing by 4 tokens an iteration (the
    loop's own growth: 4 sequences, one token each), as a detailed annotation would state it."""
    from profview.analysis.serving.phases import kv_growth

    decode = loaded(EAGER).iterations().filter(pl.col("phase") == "decode")
    context = [4 * (32 + i) for i in range(decode.height)]
    frame = decode.with_columns(pl.Series("context_tokens", context, dtype=pl.Int64))
    slope, base = statistics.linear_regression(context, decode["gpu_us"].to_list())
    fit = kv_growth(frame)
    assert fit is not None and fit[3] == 12
    assert fit[0] == pytest.approx(slope * 1000, abs=1e-3) and fit[1] == pytest.approx(base, abs=1e-3)
    assert kv_growth(frame.head(2)) is None  # too few points
    assert kv_growth(frame.with_columns(pl.lit(100, dtype=pl.Int64).alias("context_tokens"))) is None  # one length


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("execute_context_2(6144)_generation_3(3)", ("vllm", "mixed", 5, 6147, None)),
        ("execute_context_0(0)_generation_64(64)", ("vllm", "decode", 64, 64, None)),
        ("execute_context_0(0)_generation_0(0)", ("vllm", "unknown", 0, 0, None)),
        (
            "execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)_generation_3(sq3sk6144sqsq3sqsk6144)",
            ("vllm_detailed", "mixed", 5, 6147, 13288),
        ),
        ("step[EXTEND bs=2 toks=14721]", ("sglang", "prefill", 2, 14721, None)),
        ("step[DECODE bs=64 g_sq=128 g_sqsq=256 g_sqsk=262144 g_sk=131072]", ("sglang", "decode", 64, 128, 131072)),
        ("step[IDLE bs=0]", ("sglang", "unknown", 0, None, None)),
        ("prefill[bs=2 tok=14721 ctx=[7803, 6918]]", ("atom", "prefill", 2, 14721, None)),
        ("decode[bs=117/128 tok=117 d=117]", ("atom", "decode", 117, 117, None)),
        (
            "decode[bs=128 tok=384 p=2 d=126 sqsq=132612 sqsk=1114112 sk=258048 tbo=1]",
            ("atom", "mixed", 128, 384, 258048),
        ),
        ("Decode_token_12", ("plain", "decode", None, None, None)),
    ],
)
def test_annotation_formats(name: str, expected: tuple) -> None:
    """Each framework's format as its code writes it (the examples of vLLM #22496/#37524, sglang
    #23419/#24911, ATOM): requests and tokens as the name states them."""
    from profview.analysis.serving.names import parse_iteration_name

    fact = parse_iteration_name(name)
    assert fact is not None
    assert (fact.format, fact.phase, fact.requests, fact.tokens, fact.context_tokens) == expected


@pytest.mark.parametrize("name", ["capture_decode_bs4", "decode_attention", "ProfilerStep#3", "x" * 5000, "step[]"])
def test_names_that_are_not_iterations(name: str) -> None:
    from profview.analysis.serving.names import parse_iteration_name

    assert parse_iteration_name(name) is None


def shared_traces() -> list[str]:
    from support import SHARED

    found = sorted((SHARED / "traces").glob("*.json.gz")) + sorted((SHARED / "traces" / "public").glob("*.json*"))
    return [str(p.relative_to(SHARED)) for p in found if "gpt2_train_big" not in p.name]


@pytest.mark.parametrize("name", shared_traces() or ["(none)"])
def test_every_shared_trace_has_iterations_or_says_why(name: str, shared_dir) -> None:  # type: ignore[no-untyped-def]
    """On every shared trace: either no iterations (the one reason), or iterations whose GPU work is
    the raw GPU events launched in their host ranges, and whose steps are the trace's steps."""
    import gzip

    import orjson

    import profview
    from profview.errors import ProfviewError

    if name == "(none)":
        pytest.skip("no traces in ../shared")
    path = shared_dir / name
    profile = profview.load(str(path), use_cache=False)
    try:
        table = profile.iterations()
    except ProfviewError as exc:
        assert exc.problem.startswith("no iterations: no serving annotation")
        return
    with gzip.open(path) if path.suffix == ".gz" else open(path, "rb") as fh:
        doc = orjson.loads(fh.read())
    events = [e for e in (doc["traceEvents"] if isinstance(doc, dict) else doc) if e.get("ph") == "X"]
    calls = {
        e["args"]["correlation"]: e["ts"]
        for e in events
        if e.get("cat", "").lower() in ("cuda_runtime", "cuda_driver", "runtime") and "correlation" in e.get("args", {})
    }
    launched = [
        (calls[c], max(e["dur"], 0))
        for e in events
        if e.get("cat", "").lower() in ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")
        and (c := e.get("args", {}).get("correlation")) in calls
    ]
    origin = profile.span_start
    for row in table.iter_rows(named=True):
        lo = origin + row["start_us"]
        hi = lo + row["host_us"]
        expected = sum(d for at, d in launched if lo - 5e-4 <= at <= hi + 5e-4)
        assert row["gpu_us"] == pytest.approx(expected, abs=0.01), row["name"]
    if table["found_by"][0] == "steps":
        host = ("user_annotation", "cpu_op", "operator")  # torch 1.9 wrote its steps as Operator events
        steps = sorted({e["name"] for e in events if e.get("cat", "").lower() in host and "ProfilerStep#" in e["name"]})
        assert sorted(table["name"].to_list()) == steps


GROWTH = "h100_decode_kv_growth.json.gz"
STEPS = "h100_decode_profiler_steps.json.gz"


def test_kv_growth_of_a_real_decode_loop_is_read_from_its_annotations() -> None:
    """31 decode iterations recorded on an H100 at growing contexts, each annotated in vLLM's
    detailed format (sk = the KV tokens it reads): the context comes from the annotation, the GPU
    time from the raw launches, and the phases view's line is their least-squares line."""
    recipe = facts(GROWTH)
    raw = raw_iterations(GROWTH, lambda name: name.startswith("execute_"))
    view = loaded(GROWTH).iterations()
    assert view["context_tokens"].to_list() == recipe["kv_tokens"]  # the annotation, as the recording wrote it
    assert view["tokens"].to_list() == [recipe["batch"]] * len(recipe["contexts"])
    assert view["gpu_us"].to_list() == pytest.approx([it["gpu_us"] for it in raw], abs=1e-3)
    slope, base = statistics.linear_regression(recipe["kv_tokens"], [it["gpu_us"] for it in raw])
    decode = loaded(GROWTH).phases().row(0, named=True)
    assert decode["phase"] == "decode" and decode["kv_points"] == 31
    assert decode["kv_us_per_1k_context"] == pytest.approx(slope * 1000, abs=1e-3)
    assert decode["kv_base_us"] == pytest.approx(base, abs=1e-3)
    assert slope > 0 and decode["kv_r2"] > 0.9  # the attention reads the filled cache: its time grows


def test_an_annotation_repeated_inside_profiler_steps_is_the_iteration() -> None:
    """Two recorded ProfilerSteps of six ``generate_one`` ranges each (a name no framework rule
    knows): the repeated annotation is the iteration, with its step, and no tokens are invented."""
    recipe = facts(STEPS)
    view = loaded(STEPS).iterations()
    raw = raw_iterations(STEPS, lambda name: name == "generate_one")
    assert view.height == len(raw) == recipe["steps"] * recipe["tokens_per_step"]
    assert set(view["found_by"].to_list()) == {"repeated"}
    steps = sorted({e["name"] for e in raw_events(STEPS) if e.get("name", "").startswith("ProfilerStep#")})
    assert view["step"].value_counts().sort("step")["count"].to_list() == [recipe["tokens_per_step"]] * len(steps)
    assert view["gpu_us"].to_list() == pytest.approx([it["gpu_us"] for it in raw], abs=1e-3)
    assert view["phase"].unique().to_list() == ["unknown"] and view["tokens"].null_count() == view.height

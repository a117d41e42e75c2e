"""Record the GPU samples that graph replays and serving loops are tested on (run on a CUDA machine).

    python3 scripts/record_gpu_samples.py OUT_DIR [--only NAME ...]

Each trace is a real ``torch.profiler`` recording of a small decoder-only transformer written here
(no downloaded weights), gzipped into OUT_DIR:

- ``compile_reduce_overhead``: ``torch.compile(mode="reduce-overhead")`` inference. The first call
  (compilation and cudagraph-tree warm-up) runs before the profiler; the profiled calls hold the
  graph's capture (``cudaStreamBeginCapture`` … ``EndCapture``, each launch under its operator,
  module and Python stack) and its replays (``cudaGraphLaunch``), Triton kernels with their
  inductor host ops.
- ``compile_partial_window``: the same compiled model replayed many times at the end of the
  profiler's warm-up step, so the active window opens while replays launched before it still run
  (kernels with no launch in the trace), then whole replays.
- ``compile_queued_replays``: the same compiled model with the GPU behind the host inside the
  window: each of ``QUEUE_STEPS`` active steps puts a GPU sleep of ``QUEUE_SLEEP_CYCLES`` then
  ``QUEUE_REPLAYS`` replays in the stream's queue without waiting, so the replays a step launches run
  during the next one behind the previous step's work (the GPU busy all along); the last step
  waits for all of it (issue 40: a replay queued behind GPU work is GPU-bound, not launch overhead).
- ``decode_eager_kv``: an eager KV-cache generation loop, one ``ProfilerStep`` per iteration: a
  prefill of ``PROMPT`` tokens per sequence then ``DECODE`` decode iterations of one token each,
  each under ``record_function("prefill")`` / ``record_function("decode")``; shapes recorded.
- ``decode_cuda_graph``: the same loop with the decode step captured once as a CUDA graph inside the
  profiler window (``torch.cuda.graph``) and replayed per token, with stacks and modules.

Alongside each trace, ``NAME.facts.json`` gives what the recording did (calls, iterations, tokens),
so tests can check profview against the recipe as well as against the raw events.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

VOCAB, DIM, HEADS, LAYERS, MAX_LEN = 2048, 256, 4, 4, 128
BATCH, PROMPT, DECODE = 4, 32, 12
GROWTH_BATCH = 16  # the KV-growth recording: 16 sequences, one decode iteration at each context
GROWTH_CONTEXTS = tuple(range(256, 4096 + 1, 128))  # 31 context lengths
STEP_TOKENS = 6  # decode iterations in each ProfilerStep of the steps recording
QUEUED = 200  # replays queued in the profiler's warm-up step, behind a GPU sleep of SLEEP_CYCLES:
SLEEP_CYCLES = 60_000_000  # about 30 ms, so the window opens while some of those replays still wait or run
QUEUE_STEPS, QUEUE_REPLAYS = 4, 10  # compile_queued_replays: active steps, replays launched in each
QUEUE_SLEEP_CYCLES = 24_000_000  # about 12 ms of GPU sleep per step: far more GPU time than host time


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)

    def forward(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None,
                pos: torch.Tensor | None = None, length: int | None = None) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        if cache is None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            k_cache, v_cache = cache
            assert pos is not None
            k_cache.index_copy_(2, pos, k)
            v_cache.index_copy_(2, pos, v)
            if length is not None:  # one new token reads the filled cache only: work grows with it
                out = F.scaled_dot_product_attention(q, k_cache[:, :, :length], v_cache[:, :, :length])
                return self.proj(out.transpose(1, 2).reshape(b, s, DIM))
            length = torch.arange(MAX_LEN, device=x.device)
            mask = (length[None, :] <= pos[:, None]).view(1, 1, s, MAX_LEN)  # each new token sees up to itself
            out = F.scaled_dot_product_attention(q, k_cache, v_cache, attn_mask=mask)
        return self.proj(out.transpose(1, 2).reshape(b, s, DIM))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(DIM)
        self.attn = Attention()
        self.ln2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(approximate="tanh"), nn.Linear(4 * DIM, DIM))

    def forward(self, x: torch.Tensor, cache=None, pos=None, length=None) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), cache, pos, length)
        return x + self.mlp(self.ln2(x))


class TinyDecoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, tokens: torch.Tensor, caches=None, pos=None, length=None) -> torch.Tensor:
        x = self.embed(tokens)
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i], pos, length)
        return self.head(self.ln_f(x))


def new_caches(device: str, dtype: torch.dtype, batch: int = BATCH, max_len: int = MAX_LEN
               ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    shape = (batch, HEADS, max_len, DIM // HEADS)
    return [(torch.zeros(shape, device=device, dtype=dtype), torch.zeros(shape, device=device, dtype=dtype))
            for _ in range(LAYERS)]


def save(prof: profile, out_dir: str, name: str, facts: dict) -> None:
    raw = os.path.join(out_dir, f"{name}.json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, gzip.open(raw + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    with open(raw, "rb") as src:
        body = src.read()
    os.remove(raw)
    facts = dict(facts, torch=torch.__version__, device=torch.cuda.get_device_name(0))
    facts["begin_capture_calls"] = body.count(b"StreamBeginCapture")
    facts["graph_launch_calls"] = body.count(b'"cudaGraphLaunch')
    facts["graph_id_fields"] = body.count(b'"graph id"')
    with open(os.path.join(out_dir, f"{name}.facts.json"), "w") as f:
        json.dump(facts, f, indent=1)
    print(name, f"{os.path.getsize(raw + '.gz') / 1e6:.2f} MB gz", json.dumps(facts), flush=True)


def record_compiled(model: nn.Module, out_dir: str, only: set[str]) -> None:
    compiled = torch.compile(model, mode="reduce-overhead")
    tokens = torch.randint(0, VOCAB, (BATCH, PROMPT), device="cuda")
    t0 = time.time()
    with torch.no_grad():
        compiled(tokens)  # compilation and the cudagraph tree's warm-up run
        torch.cuda.synchronize()
    print(f"compiled in {time.time() - t0:.1f} s", flush=True)
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    if "compile_reduce_overhead" in only:
        with torch.no_grad(), profile(activities=acts, record_shapes=True, with_stack=True,
                                      with_modules=True) as prof:
            for _ in range(5):  # the 1st profiled call captures (records) the graph, the rest replay it
                compiled(tokens)
                torch.cuda.synchronize()
                prof.step()
        save(prof, out_dir, "compile_reduce_overhead", {"calls": 5, "batch": BATCH, "seq": PROMPT})
    if "compile_partial_window" in only:
        with torch.no_grad():
            for _ in range(3):
                compiled(tokens)
            torch.cuda.synchronize()
            sched = schedule(wait=0, warmup=1, active=2, repeat=1)
            with profile(activities=acts, record_shapes=True, schedule=sched) as prof:
                torch.cuda._sleep(SLEEP_CYCLES)  # the GPU falls behind the host by tens of ms
                for _ in range(QUEUED):  # warm-up step: replays queued, not waited for
                    compiled(tokens)
                prof.step()  # the active window opens while those replays still run
                for _ in range(2):
                    for _ in range(3):
                        compiled(tokens)
                    torch.cuda.synchronize()
                    prof.step()
        save(prof, out_dir, "compile_partial_window", {"queued_before_window": QUEUED, "active_steps": 2,
                                                       "replays_per_active_step": 3})
    if "compile_queued_replays" in only:
        with torch.no_grad():
            compiled(tokens)
            torch.cuda.synchronize()
            sched = schedule(wait=0, warmup=1, active=QUEUE_STEPS, repeat=1)
            with profile(activities=acts, record_shapes=True, schedule=sched) as prof:
                for step in range(QUEUE_STEPS + 1):  # the first is the profiler's warm-up step
                    torch.cuda._sleep(QUEUE_SLEEP_CYCLES)
                    for _ in range(QUEUE_REPLAYS):
                        compiled(tokens)
                    if step == QUEUE_STEPS:
                        torch.cuda.synchronize()  # the last step waits for everything queued
                    prof.step()
        save(prof, out_dir, "compile_queued_replays", {"active_steps": QUEUE_STEPS, "replays_per_step": QUEUE_REPLAYS,
                                                       "sleep_cycles_per_step": QUEUE_SLEEP_CYCLES})


def greedy(logits: torch.Tensor) -> torch.Tensor:
    return logits[:, -1:, :].argmax(dim=-1)


def record_eager_decode(model: nn.Module, out_dir: str) -> None:
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    prompt = torch.randint(0, VOCAB, (BATCH, PROMPT), device="cuda")
    with torch.no_grad():
        caches = new_caches("cuda", torch.float16)
        model(prompt, caches, torch.arange(PROMPT, device="cuda"))  # warm-up outside the profiler
        torch.cuda.synchronize()
        caches = new_caches("cuda", torch.float16)
        with profile(activities=acts, record_shapes=True) as prof:
            with record_function("prefill"):
                nxt = greedy(model(prompt, caches, torch.arange(PROMPT, device="cuda")))
            torch.cuda.synchronize()
            prof.step()
            for i in range(DECODE):
                with record_function("decode"):
                    pos = torch.tensor([PROMPT + i], device="cuda")
                    nxt = greedy(model(nxt, caches, pos))
                torch.cuda.synchronize()
                prof.step()
    save(prof, out_dir, "decode_eager_kv", {"batch": BATCH, "prompt": PROMPT, "decode_iterations": DECODE,
                                            "prefill_tokens": BATCH * PROMPT, "decode_tokens_each": BATCH})


def record_graph_decode(model: nn.Module, out_dir: str) -> None:
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    prompt = torch.randint(0, VOCAB, (BATCH, PROMPT), device="cuda")
    with torch.no_grad():
        caches = new_caches("cuda", torch.float16)
        static_tok = torch.zeros((BATCH, 1), dtype=torch.long, device="cuda")
        static_pos = torch.tensor([PROMPT], device="cuda")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graph asks
            for _ in range(2):
                model(static_tok, caches, static_pos)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with profile(activities=acts, record_shapes=True, with_stack=True, with_modules=True) as prof:
            with record_function("capture_decode_bs4"), torch.cuda.graph(graph):
                static_out = greedy(model(static_tok, caches, static_pos))
            torch.cuda.synchronize()
            prof.step()
            with record_function("prefill"):
                nxt = greedy(model(prompt, caches, torch.arange(PROMPT, device="cuda")))
            torch.cuda.synchronize()
            prof.step()
            for i in range(DECODE):
                with record_function("decode"):
                    static_tok.copy_(nxt)
                    static_pos.fill_(PROMPT + i)
                    graph.replay()
                    nxt = static_out.clone()
                torch.cuda.synchronize()
                prof.step()
    save(prof, out_dir, "decode_cuda_graph", {"batch": BATCH, "prompt": PROMPT, "decode_iterations": DECODE,
                                              "graph_replays": DECODE, "captures": 1})


def vllm_detailed(context: tuple[int, int, int], generation: tuple[int, int, int]) -> str:
    """An iteration annotation in vLLM's detailed format (``--profiler-config.detailed_trace_annotation``,
    read by analysis/serving/names.py): (requests, query tokens, KV tokens) of the prefill and the
    decode requests; the squared sums are written as the query and KV products."""
    (_, cq, ck), (g, gq, gk) = context, generation
    return (f"execute_{cq + gq}_context_{context[0]}(sq{cq}sk{ck}sqsq{cq * cq}sqsk{cq * ck})"
            f"_generation_{g}(sq{gq}sk{gk}sqsq{gq}sqsk{gk})")


def record_kv_growth(model: nn.Module, out_dir: str) -> None:
    """Decode iterations at growing context lengths, annotated in vLLM's detailed format (the KV
    tokens each reads): the decode step's attention reads the filled cache only, so its GPU time
    grows with the context (the phases view's line fit)."""
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    batch, max_len = GROWTH_BATCH, GROWTH_CONTEXTS[-1] + 1
    caches = new_caches("cuda", torch.float16, batch, max_len)
    for k_cache, v_cache in caches:  # a filled cache: what the earlier tokens would have written
        k_cache.normal_()
        v_cache.normal_()
    tok = torch.randint(0, VOCAB, (batch, 1), device="cuda")
    with torch.no_grad():
        model(tok, caches, torch.tensor([8], device="cuda"), 9)  # warm-up outside the profiler
        torch.cuda.synchronize()
        with profile(activities=acts, record_shapes=True) as prof:
            for length in GROWTH_CONTEXTS:
                with record_function(vllm_detailed((0, 0, 0), (batch, batch, batch * (length + 1)))):
                    tok = greedy(model(tok, caches, torch.tensor([length], device="cuda"), length + 1))
                torch.cuda.synchronize()
    save(prof, out_dir, "decode_kv_growth", {"batch": batch, "contexts": list(GROWTH_CONTEXTS),
                                             "kv_tokens": [batch * (n + 1) for n in GROWTH_CONTEXTS],
                                             "annotation": "vLLM detailed format, written by this script"})


def record_profiler_steps(model: nn.Module, out_dir: str) -> None:
    """Two recorded ProfilerStep ranges (a schedule, after one warm-up step), each holding STEP_TOKENS
    decode iterations under ``record_function("generate_one")``: a name no framework rule knows,
    repeated inside a step."""
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    prompt = torch.randint(0, VOCAB, (BATCH, PROMPT), device="cuda")
    with torch.no_grad():
        caches = new_caches("cuda", torch.float16)
        nxt = greedy(model(prompt, caches, torch.arange(PROMPT, device="cuda")))
        torch.cuda.synchronize()
        at = PROMPT
        steps = schedule(wait=0, warmup=1, active=2, repeat=1)
        with profile(activities=acts, record_shapes=True, schedule=steps) as prof:
            for _ in range(3):  # a warm-up step (not kept), then the two recorded ones
                for _ in range(STEP_TOKENS):
                    with record_function("generate_one"):
                        nxt = greedy(model(nxt, caches, torch.tensor([at], device="cuda")))
                    at += 1
                torch.cuda.synchronize()
                prof.step()
    save(prof, out_dir, "decode_profiler_steps", {"batch": BATCH, "steps": 2, "tokens_per_step": STEP_TOKENS})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    names = {"compile_reduce_overhead", "compile_partial_window", "compile_queued_replays", "decode_eager_kv",
             "decode_cuda_graph", "decode_kv_growth", "decode_profiler_steps"}
    only = set(args.only) if args.only else names
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(0)
    model = TinyDecoder().cuda().half().eval()
    print(torch.__version__, torch.cuda.get_device_name(0), flush=True)
    for name, record in (("decode_eager_kv", lambda: record_eager_decode(model, args.out_dir)),
                         ("decode_cuda_graph", lambda: record_graph_decode(model, args.out_dir)),
                         ("decode_kv_growth", lambda: record_kv_growth(model, args.out_dir)),
                         ("decode_profiler_steps", lambda: record_profiler_steps(model, args.out_dir))):
        if name in only:
            try:
                record()
            except Exception as exc:  # one recording failing must not lose the others
                print(f"{name} failed: {exc!r}", file=sys.stderr, flush=True)
    if only & {"compile_reduce_overhead", "compile_partial_window", "compile_queued_replays"}:
        try:
            record_compiled(model, args.out_dir, only)
        except Exception as exc:
            print(f"compiled recordings failed: {exc!r}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

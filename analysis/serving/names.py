"""What a serving framework's iteration annotation says, read from its name alone.

Each format is the one its framework writes around one scheduler iteration (the host range a
``record_function`` opens); the numbers are taken as written, never estimated:

* **vLLM** (``vllm/v1/worker/gpu_worker.py``, vLLM #22496):
  ``execute_context_C(T)_generation_G(U)``: C prefill (context) requests scheduling T tokens, G
  decode (generation) requests scheduling U tokens.  Some builds write ``(T_S)`` with S the sum of
  the requests' squared token counts (TraceLens' B200 trace: ``(888_788544)``, 888² = 788544): T is read.
* **vLLM detailed** (``--profiler-config.detailed_trace_annotation``, vLLM #37524):
  ``execute_N_context_C(sqAskBsqsqDsqskE)_generation_G(sqHskIsqsqJsqskK)``: A and H the query
  (scheduled) tokens of the two groups, B and I the sums of their KV lengths (the context the
  attention reads), N = A + H.
* **SGLang** (``ModelRunner.forward``, sglang #23419): ``step[EXTEND bs=B toks=T]`` for a prefill
  batch, ``step[MODE bs=B]`` otherwise (``DECODE``, ``MIXED``, ``IDLE``, ``TARGET_VERIFY`` …), and
  its roofline variant (sglang #24911) with ``c=``/``g=`` request counts and ``c_sq= g_sq= c_sk= g_sk=``
  sums.  A ``DECODE`` batch without ``g_sq`` decodes one token per request: its tokens are ``bs``.
* **ATOM** (ROCm/ATOM): ``prefill[bs=B tok=T ctx=[…]]`` and ``decode[bs=B tok=T d=D …]`` (``bs=117/128``:
  117 real requests in a 128-slot graph; ``p=`` prefill requests in a decode batch make it mixed;
  ``sk=`` the KV lengths' sum in the detailed variant).
* **Plain loops**: an annotation named ``prefill`` or ``decode`` (any case), optionally followed by
  ``_step``, ``_token(s)`` or ``_iter(ation)`` and a number (``decode_token_7``, ``decode 12``): an
  eager generation loop's own ranges.  They give the phase only; tokens come from the iteration's
  embedding call (:mod:`.iterations`).

Anything else is not an iteration name (None).  A phase is ``prefill``, ``decode``, ``mixed``
(both kinds of request in one batch) or ``unknown`` (an idle or speculative-verify step, or a
vLLM step scheduling nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...frames import checked_sum, count_of

PHASES = ("prefill", "decode", "mixed", "unknown")

_VLLM = re.compile(r"execute_context_([0-9]+)\(([0-9]+)(?:_[0-9]+)?\)_generation_([0-9]+)\(([0-9]+)(?:_[0-9]+)?\)")
_VLLM_DETAILED = re.compile(
    r"execute_([0-9]+)_context_([0-9]+)\(sq([0-9]+)sk([0-9]+)sqsq[0-9]+sqsk[0-9]+\)"
    r"_generation_([0-9]+)\(sq([0-9]+)sk([0-9]+)sqsq[0-9]+sqsk[0-9]+\)"
)
_SGLANG = re.compile(r"step\[([A-Za-z_]+)((?:\s[^\]]*)?)\]")
_ATOM = re.compile(r"(prefill|decode)\[(.*)\]")
_PLAIN = re.compile(r"(prefill|decode)(?:[_\- ](?:step|tokens?|iter|iteration))?(?:[_\-# ]?[0-9]+)?", re.IGNORECASE)
_KEY_VALUE = re.compile(r"(\w+)=([0-9]+)")

#: SGLang forward modes by phase (others: unknown).
_SGLANG_PHASES = {"DECODE": "decode", "EXTEND": "prefill", "PREFILL": "prefill", "MIXED": "mixed"}


@dataclass(frozen=True)
class IterationName:
    """What one iteration annotation says.  ``format``: ``vllm``, ``vllm_detailed``, ``sglang``,
    ``atom`` or ``plain``; ``requests``/``tokens``/``context_tokens`` are None where it says nothing
    (``context_tokens``: the sum of the KV lengths the step's attention reads)."""

    format: str
    phase: str
    requests: int | None = None
    tokens: int | None = None
    context_tokens: int | None = None


def _phase(prefill_requests: int, decode_requests: int) -> str:
    if prefill_requests and decode_requests:
        return "mixed"
    if prefill_requests:
        return "prefill"
    return "decode" if decode_requests else "unknown"


def parse_iteration_name(name: str) -> IterationName | None:
    """The facts of one annotation name, or None when it is no known iteration format."""
    if len(name) > 4096:  # no framework writes such a name: not read (text work stays linear)
        return None
    if match := _VLLM_DETAILED.fullmatch(name):
        _n, ctx, c_sq, c_sk, gen, g_sq, g_sk = (count_of(g) for g in match.groups())
        return IterationName(
            "vllm_detailed", _phase_of(ctx, gen), _both(ctx, gen), _both(c_sq, g_sq), _both(c_sk, g_sk)
        )
    if match := _VLLM.fullmatch(name):
        ctx, ctx_tokens, gen, gen_tokens = (count_of(g) for g in match.groups())
        return IterationName("vllm", _phase_of(ctx, gen), _both(ctx, gen), _both(ctx_tokens, gen_tokens))
    if match := _SGLANG.fullmatch(name):
        return _sglang(match.group(1).upper(), dict(_KEY_VALUE.findall(match.group(2))))
    if match := _ATOM.fullmatch(name):
        return _atom(match.group(1), match.group(2))
    if match := _PLAIN.fullmatch(name):
        return IterationName("plain", match.group(1).lower())
    return None


def _phase_of(prefill_requests: int | None, decode_requests: int | None) -> str:
    """:func:`_phase` of two request counts; unknown where either is no count (too many digits)."""
    if prefill_requests is None or decode_requests is None:
        return "unknown"
    return _phase(prefill_requests, decode_requests)


def _int(values: dict[str, str], key: str) -> int | None:
    """A count the name gives (:func:`~profview.frames.count_of`: None past 18 digits)."""
    return count_of(values[key]) if key in values else None


def _sum(*parts: int | None) -> int | None:
    """The sum of the parts given; None when none is, or when it would not fit Int64."""
    return checked_sum(list(parts))


def _both(first: int | None, second: int | None) -> int | None:
    """The sum of two counts that must both be known (None: either is not, or it would not fit)."""
    return checked_sum([first, second]) if first is not None and second is not None else None


def _sglang(mode: str, values: dict[str, str]) -> IterationName:
    phase = _SGLANG_PHASES.get(mode, "unknown")
    requests = _int(values, "bs")
    queries = _sum(_int(values, "c_sq"), _int(values, "g_sq"))
    context = _sum(_int(values, "c_sk"), _int(values, "g_sk"))
    if phase == "decode":
        tokens = queries if queries is not None else requests  # DECODE: one token per request
    elif phase == "prefill":
        tokens = _int(values, "toks") if "toks" in values else queries
    elif phase == "mixed":
        tokens = queries if queries is not None else _sum(_int(values, "ext"), _int(values, "dec"))
    else:
        tokens = None
    return IterationName("sglang", phase, requests, tokens, context)


def _atom(word: str, body: str) -> IterationName:
    values = dict(_KEY_VALUE.findall(body))
    batch = re.search(r"(?:^|\s)bs=([0-9]+)", body)  # bs=117/128: 117 real requests
    requests = count_of(batch.group(1)) if batch else None
    phase = word
    if word == "decode" and (_int(values, "p") or 0) > 0:
        phase = "mixed" if (_int(values, "d") or 0) > 0 else "prefill"
    return IterationName("atom", phase, requests, _int(values, "tok"), _int(values, "sk"))

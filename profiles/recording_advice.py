"""Advice on how to record what a trace lacks, fitted to the profiler that wrote the trace.

The lines saying why a view is empty end in PyTorch's remedy, ``(record with
torch.profiler.profile(record_shapes=True))``.  That remedy is right for a Kineto trace only: told
to a JAX/XLA, TensorFlow, PaddlePaddle, Nsight Systems or rocprofv3 user it names an option their
profiler does not have.  For those traces the line says instead that profview reads the figure
from PyTorch's option alone, without guessing at an option of their profiler::

    no input shapes in this trace, so no FLOPs or bytes per operator (a JAX/XLA/TensorFlow trace:
    profview reads them from PyTorch's record_shapes=True)
"""

from __future__ import annotations

import re

#: The format name of a Kineto (PyTorch) Chrome trace (profiles/loading.py's ``TRACE_FORMAT``).
PYTORCH_TRACE = "Chrome trace"
#: Format names (profiles/loading.py) → what the advice calls the input.
PROFILERS = {
    "Chrome trace without categories (JAX/XLA/TensorFlow style)": "a JAX/XLA/TensorFlow trace",
    "PaddlePaddle Chrome trace": "a PaddlePaddle trace",
    "Nsight Systems SQLite export": "an Nsight Systems export",
    "rocprofv3 JSON": "a rocprofv3 run",
}
#: PyTorch options that another profiler's run of PyTorch can record too: format → option → its
#: remedy there (under nsys, ``emit_nvtx`` writes the input shapes into its NVTX ranges).
NATIVE_REMEDIES = {
    "Nsight Systems SQLite export": {
        "record_shapes=True": "record under nsys with torch.autograd.profiler.emit_nvtx(record_shapes=True)",
    },
}
_REMEDY = re.compile(r"[:(]\s*record with (?P<how>.*?)\)?$")


def fit_advice(trace_format: str, why: str) -> str:
    """``why`` as it is for a PyTorch trace; for another profiler's, its torch remedy replaced by
    where profview reads the figure from (see the module's docstring)."""
    if trace_format == PYTORCH_TRACE:
        return why
    found = _REMEDY.search(why)
    if found is None:
        return why
    how = found.group("how").removeprefix("torch.profiler.profile(")
    if how.count(")") > how.count("("):
        how = how.removesuffix(")")
    head = why[: found.start()].rstrip(" :")
    if head.count("(") > head.count(")"):  # the remedy ended a parenthesis of its own
        head += ")"
    who = PROFILERS.get(trace_format, f"a {trace_format} trace")
    native = NATIVE_REMEDIES.get(trace_format, {}).get(how)
    if native is not None:
        return f"{head} ({who}: {native})"
    return f"{head} ({who}: profview reads this from PyTorch's {how})"


__all__ = ["NATIVE_REMEDIES", "PROFILERS", "PYTORCH_TRACE", "fit_advice"]

"""Each stack's allocation site: the innermost frame in the user's code.

A snapshot's stacks run innermost first, through the allocator's C++ frames (``torch::unwind``,
``c10::cuda::CUDACachingAllocator``), torch's own Python (``torch/nn/modules/module.py``,
``torch/_tensor.py``) and launchers (``runpy``, ``contextlib``) to the user's line that asked
for the memory. The site skips the first three kinds (:data:`SKIPPED_FILES`, and every frame
that is not Python); where every frame is skipped it is the innermost Python frame; a stack of
C++ frames only (autograd's backward thread) names the autograd node that allocated
(``torch::autograd::generated::BmmBackward0::apply``), else its innermost frame outside the
allocator and the dispatcher (:data:`ALLOCATOR_FRAMES`), else its innermost frame; a block or
event without frames has the site :data:`NO_STACK`.
"""

from __future__ import annotations

import re

import polars as pl

#: Python files that are not the user's code: torch and Triton themselves, the interpreter's
#: launchers and wrappers, the launchers of accelerate and DeepSpeed, and einops (a thin wrapper of torch ops).
SKIPPED_FILES = re.compile(
    r"(^|/)(torch|triton)/|^<frozen |^<string>$|^<eval_with_key>|(^|/)(runpy|contextlib|functools|threading)\.py$"
    r"|(^|/)(accelerate/commands|deepspeed/launcher|einops|opt_einsum)/"
)
#: C++ frames of the allocator and of the dispatch to it (never the site of a C++-only stack).
ALLOCATOR_FRAMES = re.compile(
    r"unwind::|CapturedTraceback|gather_with_cpp|CachingAllocator|at::detail::|_ops::|wrap_kernel_functor|redispatch"
    r"|at::meta::|at::\(anonymous|at::native::(empty|zeros|ones)|at::empty|VariableType|^\?\?$|^_start$|clone$"
)
#: An autograd node's ``apply``: the backward operator that allocated, in a C++-only stack.
AUTOGRAD_NODE = re.compile(r"torch::autograd::generated::\w+::apply")
#: The site of an allocation whose stack was not recorded (allocated before
#: ``_record_memory_history``, or recorded without stacks).
NO_STACK = "(no stack recorded)"
SITE_SCHEMA: dict[str, pl.DataType] = {
    "stack": pl.Int64(), "site": pl.String(), "site_file": pl.String(), "site_line": pl.Int64(),
    "site_name": pl.String(),
}


def normalise_path(filename: str) -> str:
    """A frame's file with Windows separators as ``/`` (``D:\\Dev\\model.py`` -> ``D:/Dev/model.py``)."""
    return filename.replace("\\", "/")


def site_label(filename: str | None, line: int | None, name: str | None) -> str:
    """How a site is written: ``file:line name``."""
    return f"{filename or '??'}:{line if line is not None else '?'} {name or '?'}"


def stack_sites(stacks: pl.DataFrame) -> pl.DataFrame:
    """One row per stack of ``stacks`` (:data:`SITE_SCHEMA`): its site and that frame's file, line
    and function."""
    if stacks.is_empty():
        return pl.DataFrame(schema=SITE_SCHEMA)
    path = pl.col("filename").fill_null("").str.replace_all("\\", "/", literal=True)
    python = path.str.ends_with(".py")
    skipped = path.str.contains(SKIPPED_FILES.pattern)
    name = pl.col("name").fill_null("")
    ranked = stacks.with_columns(
        rank=pl.when(python & ~skipped).then(0).when(python).then(1)
        .when(name.str.contains(AUTOGRAD_NODE.pattern)).then(2)
        .when(~name.str.contains(ALLOCATOR_FRAMES.pattern)).then(3)
        .otherwise(4),
    )
    chosen = (
        ranked.sort("stack", "rank", "depth")
        .group_by("stack", maintain_order=True)
        .first()
        .select(
            "stack",
            site_file=pl.col("filename"),
            site_line=pl.col("line"),
            site_name=pl.col("name"),
        )
    )
    labels = [site_label(f, ln, n) for f, ln, n in chosen.select("site_file", "site_line", "site_name").iter_rows()]
    return chosen.with_columns(site=pl.Series(labels, dtype=pl.String())).select(list(SITE_SCHEMA))


def with_sites(frame: pl.DataFrame, sites: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (with a ``stack`` column) with each row's ``site`` (:data:`NO_STACK` without a stack)."""
    return frame.join(sites.select("stack", "site"), on="stack", how="left").with_columns(
        pl.col("site").fill_null(NO_STACK)
    )

"""Name rules: which of an ordered list of regular expressions a name matches first, and whether a
user's pattern can run at all, both with Polars' regex engine.

Polars runs Rust's ``regex`` crate: finite automata, so a match costs time linear in the name
whatever the pattern, and the rules run over a column of distinct names at once.  Python's ``re``
backtracks: the kernel-name rule ``miopen.*conv`` over a 240 KB name of ``miopen`` repeated took
28 s (quadratic), a user's ``(a+)+$`` over 29 characters ran past a minute (exponential), and
a million distinct names cost 3.6 million calls (issue 35).  Every pattern profview applies to
names (its own rules, ``--filter``, ``--comm-pattern``, ``--what-if``, the viewer's ``/``) goes
through this engine; it has no look-around and no back-references, and says so in one line.
No I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

#: Where the engine's message says what is wrong (``error: unclosed group``).
_ERROR_PREFIX = "error: "
#: How far the engine indents the pattern and its marks in a message.
_INDENT = 4


def first_match(names: pl.Series, rules: Sequence[tuple[str, str]]) -> pl.Series:
    """Per name, the label of the first rule (``(label, regex)``, in order) whose regex it
    contains, else null.  Pass distinct names: each rule runs once over the whole column."""
    column = names.cast(pl.String)
    if not rules or not len(column):
        return pl.Series(names.name, [None] * len(column), dtype=pl.String)
    text = pl.col("name")
    chosen = pl.when(text.str.contains(rules[0][1])).then(pl.lit(rules[0][0]))
    for label, pattern in rules[1:]:
        chosen = chosen.when(text.str.contains(pattern)).then(pl.lit(label))  # type: ignore[assignment]
    frame = pl.DataFrame({"name": column})
    return frame.select(chosen.otherwise(pl.lit(None, dtype=pl.String)).alias(names.name)).to_series()


def pattern_problem(pattern: str, *, ignore_case: bool = False) -> str | None:
    """Why the engine cannot run ``pattern`` (with ``(?i)`` before it: ``ignore_case``), in one
    line (None: it can)."""
    prefix = "(?i)" if ignore_case else ""
    try:
        pl.Series("name", [""], dtype=pl.String).str.contains(prefix + pattern)
    except pl.exceptions.PolarsError as exc:
        return engine_error(exc, shift=len(prefix), where="\n" not in pattern)
    return None


def engine_error(exc: BaseException, *, shift: int = 0, where: bool = True) -> str:
    """The engine's multi-line refusal as one line: what is wrong, and (``where``) at which
    character of the pattern (less ``shift`` characters the caller put before it)."""
    text = str(exc).split("This error occurred in the following expression:")[0]
    raw = text.splitlines()
    lines = [line.strip() for line in raw]
    reason = next((line[len(_ERROR_PREFIX) :] for line in lines if line.startswith(_ERROR_PREFIX)), None)
    if reason is None:
        if any("exceeds size limit" in line for line in lines):
            return "too large to run (compiled, it exceeds the engine's 10 MiB)"
        return " ".join(line for line in lines if line).removeprefix("regex error: ")
    # The engine marks the place under the pattern, both indented by four spaces.
    carets = [line for line in raw if line.strip() and set(line.strip()) == {"^"}]
    if where and len(carets) == 1 and carets[0].index("^") - _INDENT >= shift:
        reason += f" at position {carets[0].index('^') - _INDENT - shift}"
    return reason

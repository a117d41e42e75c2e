"""Before/after: two profiles' views side by side, one row per name found on either side.

Pure functions over the views of :mod:`~profview.analysis.tables.kernels`,
:mod:`~profview.analysis.tables.operators` and :mod:`~profview.analysis.tables.steps`; every
figure is one of the two profiles' own figures (or, with ``steps``, that figure divided by the
profile's own step count), and every ``delta`` is ``after - before`` of those two numbers.

* **status** of a row: ``added`` (only AFTER has it), ``removed`` (only BEFORE), ``unchanged``
  (``|delta|`` within ``tolerance_pct`` percent of the before figure), else ``increased`` or
  ``decreased``.  A name missing on one side counts 0 there.
* **matching**: names equal on both sides pair first (``match_rule`` ``exact``).  With
  ``match="normalized"`` the names left over are paired when they are equal after the rules of
  :data:`MATCH_RULES`, applied one more at a time (``arch``, then ``arch`` + ``tile``, then all
  three), and only one-to-one: a normalised name shared by several kernels on one side stays
  unpaired.  Rows nobody paired are kept (``match_rule`` ``unmatched``), never hidden.
* A name a text table cut short (``void at::native::vectorized_el...``) pairs with the one
  whole name of the other side that starts with it (``match_rule`` ``prefix``, in every match
  mode).  Where it starts several, each row of the table that bears it (a table keeps distinct
  rows under one cut name) pairs with the one whole name whose figures agree with its own: the
  same calls and times within :data:`FIGURE_AGREEMENT` (``prefix+figures``), and no other row's.
  A cut name nothing singles out stays unpaired, and :func:`unpaired_cut_names` says which.
* A name a side holds in more than one row (text tables cut long names short) is one row of
  the diff, with that side's figures summed (:func:`one_row_per_name`).
* Rows are sorted by the size of the change, largest first.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import polars as pl

from ...frames import CATEGORIES, CATEGORY_LABELS

STATUSES: tuple[str, ...] = ("added", "removed", "increased", "decreased", "unchanged")
MATCH_MODES: tuple[str, ...] = ("exact", "normalized")
#: Glyphs that mark a row without colour (NO_COLOR): worse, better, new, gone, same.
GLYPHS: dict[str, str] = {
    "increased": "▲",
    "decreased": "▼",
    "added": "▲ new",
    "removed": "▼ gone",
    "unchanged": "=",
}
DEFAULT_TOLERANCE_PCT = 5.0

_ARCH = re.compile(
    r"(?<![A-Za-z0-9])(?:sm_?\d{2,3}[a-z]?|ampere|volta|turing|hopper|blackwell|maxwell|pascal|kepler)_",
    re.IGNORECASE,
)
_CUTLASS_ARCH = re.compile(r"cutlass_\d{2,3}_")
_TILE = re.compile(r"\d+(?:x\d+)+")
_TILE_WORD = re.compile(r"(stage|align|warpsize|tilesize|sliced)\d+", re.IGNORECASE)


_ARCH_WORD = re.compile(r"(?<![A-Za-z0-9])(ampere|volta|turing|hopper|blackwell|maxwell|pascal|kepler)_", re.IGNORECASE)


def architectures(names: list[str]) -> list[str]:
    """The GPU architectures kernel names carry (``ampere_sgemm_…`` → ``ampere``), sorted; what tells
    that two traces ran on different GPUs, whose library kernels then differ by name."""
    found = {m.group(1).lower() for name in names for m in _ARCH_WORD.finditer(name)}
    return sorted(found)


def _strip_arch(name: str) -> str:
    """``sm80_``/``sm90_``/``ampere_``/``volta_``... prefixes and ``cutlass_80_`` removed."""
    return _CUTLASS_ARCH.sub("cutlass_", _ARCH.sub("", name))


def _strip_tile(name: str) -> str:
    """Tile and launch sizes (``128x64``, ``stage4``, ``align8``) replaced by ``#``."""
    return _TILE_WORD.sub(r"\1#", _TILE.sub("#", name))


def _strip_brackets(name: str, open_: str, close: str) -> str:
    depth, kept = 0, []
    for char in name:
        if char == open_:
            if depth == 0:
                kept.append(char)
            depth += 1
        elif char == close and depth:
            depth -= 1
            if depth == 0:
                kept.append(char)
        elif depth == 0:
            kept.append(char)
    return "".join(kept)


def _strip_template(name: str) -> str:
    """Template arguments ``<...>`` and parameter lists ``(...)`` emptied."""
    return _strip_brackets(_strip_brackets(name, "<", ">"), "(", ")")


#: The normalisation rules, in the order they are added: (name, function).
MATCH_RULES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("arch", _strip_arch),
    ("tile", _strip_tile),
    ("template", _strip_template),
)


def normalized_name(name: str, rules: int = len(MATCH_RULES)) -> str:
    """``name`` with the first ``rules`` rules of :data:`MATCH_RULES` applied."""
    for _, rule in MATCH_RULES[:rules]:
        name = rule(name)
    return name


def pair_names(before: list[str], after: list[str], match: str = "exact") -> pl.DataFrame:
    """``name_before, name_after, match_rule``: every name of either side once (null: not on that side)."""
    if match not in MATCH_MODES:
        raise ValueError(f"match must be one of {MATCH_MODES}, not {match!r}")
    after_set = set(after)
    pairs: list[tuple[str | None, str | None, str]] = [(n, n, "exact") for n in before if n in after_set]
    before_set = set(before)
    left_before = [n for n in before if n not in after_set]
    left_after = [n for n in after if n not in before_set]
    if match == "normalized":
        for level, (rule, _) in enumerate(MATCH_RULES, 1):
            keys_before: dict[str, list[str]] = {}
            keys_after: dict[str, list[str]] = {}
            for n in left_before:
                keys_before.setdefault(normalized_name(n, level), []).append(n)
            for n in left_after:
                keys_after.setdefault(normalized_name(n, level), []).append(n)
            paired: set[str] = set()
            for key, names in keys_before.items():
                others = keys_after.get(key, [])
                if len(names) == 1 and len(others) == 1:
                    pairs.append((names[0], others[0], rule))
                    paired.update((names[0], others[0]))
            left_before = [n for n in left_before if n not in paired]
            left_after = [n for n in left_after if n not in paired]
    prefixed, left_before, left_after = _pair_cut_names(left_before, left_after)
    pairs += prefixed
    pairs += [(n, None, "unmatched") for n in left_before]
    pairs += [(None, n, "unmatched") for n in left_after]
    return pl.DataFrame(
        pairs, schema={"name_before": pl.String, "name_after": pl.String, "match_rule": pl.String}, orient="row"
    )


#: How a text table ends a name it cut short (torch's tables: ``...``).
CUT_MARKS: tuple[str, ...] = ("...", "…")


def cut_prefix(name: str) -> str | None:
    """The kept start of a name a table cut short, or None for a whole name."""
    for mark in CUT_MARKS:
        if name.endswith(mark) and len(name) > len(mark):
            return name[: -len(mark)]
    return None


def _pair_cut_names(
    before: list[str], after: list[str]
) -> tuple[list[tuple[str | None, str | None, str]], list[str], list[str]]:
    """Pair each cut name (``void at::native::vectorized_el...``) with the one whole name of the
    other side it is the start of (rule ``prefix``); a cut name that starts several stays unpaired.
    Returns (pairs, names left on each side)."""
    pairs: list[tuple[str | None, str | None, str]] = []
    for flip in (False, True):
        cut_side, whole_side = (after, before) if flip else (before, after)
        whole = [n for n in whole_side if cut_prefix(n) is None]
        wanted: dict[str, list[str]] = {}
        for name in cut_side:
            start = cut_prefix(name)
            if start is not None:
                found = [w for w in whole if w.startswith(start)]
                if len(found) == 1:
                    wanted.setdefault(found[0], []).append(name)
        taken: set[str] = set()
        for full, cut in wanted.items():
            if len(cut) == 1:  # one cut name for one whole name
                pairs.append((full, cut[0], "prefix") if flip else (cut[0], full, "prefix"))
                taken.update((full, cut[0]))
        before = [n for n in before if n not in taken]
        after = [n for n in after if n not in taken]
    return pairs, before, after


#: A table's cut row and a whole name agree when their calls are equal and each time they both have
#: is within this share of the larger: tables print 4-5 significant digits (``19.884ms`` for
#: 19,884.191 µs), and two different kernels of one name's start agreeing so closely on every
#: figure is not a coincidence to expect (issue 34).
FIGURE_AGREEMENT = 1e-3


def _agree(row: dict[str, object], other: dict[str, object], values: tuple[str, ...]) -> bool:
    if row.get("calls") is None or row.get("calls") != other.get("calls"):
        return False
    times = [v for v in values if v != "calls" and row.get(v) is not None and other.get(v) is not None]
    for value in times:
        a, b = float(row[value]), float(other[value])  # type: ignore[arg-type]
        if abs(a - b) > FIGURE_AGREEMENT * max(abs(a), abs(b)):
            return False
    return bool(times)


def resolve_cut_rows(
    cut: pl.DataFrame, whole: pl.DataFrame, values: tuple[str, ...]
) -> tuple[pl.DataFrame, dict[str, str]]:
    """``cut`` with each row whose name a table cut short renamed to the whole name of ``whole`` it
    stands for, where that is certain; and each such whole name's rule (``prefix``: the only whole
    name the cut one starts, claimed by no other row; ``prefix+figures``: of the several it starts,
    the only one whose figures agree with the row's, and with no other row's)."""
    if "name" not in cut.columns or "name" not in whole.columns or not cut.height:
        return cut, {}
    names = cut["name"].to_list()
    cut_rows = [i for i, name in enumerate(names) if isinstance(name, str) and cut_prefix(name) is not None]
    if not cut_rows:
        return cut, {}
    whole_names = [n for n in whole["name"].unique(maintain_order=True).to_list() if cut_prefix(n) is None]
    candidates = {i: [w for w in whole_names if w.startswith(cut_prefix(names[i]) or "")] for i in cut_rows}
    resolved: dict[int, tuple[str, str]] = {}
    claimed: dict[str, list[int]] = {}
    for i, found in candidates.items():
        if len(found) == 1:
            claimed.setdefault(found[0], []).append(i)
    for full, claims in claimed.items():
        if len(claims) == 1:
            resolved[claims[0]] = (full, "prefix")
    present = tuple(v for v in values if v in cut.columns and v in whole.columns)
    rows = cut.select(present).to_dicts()
    figures = {r["name"]: r for r in one_row_per_name(whole.select("name", *present), present).to_dicts()}
    taken = {full for full, _rule in resolved.values()}
    agreeing: dict[int, list[str]] = {}
    for i, found in candidates.items():
        if i not in resolved:
            agreeing[i] = [w for w in found if w not in taken and _agree(rows[i], figures[w], present)]
    by_whole: dict[str, list[int]] = {}
    for i, found in agreeing.items():
        for w in found:
            by_whole.setdefault(w, []).append(i)
    for i, found in agreeing.items():
        if len(found) == 1 and by_whole[found[0]] == [i]:
            resolved[i] = (found[0], "prefix+figures")
    if not resolved:
        return cut, {}
    renamed = [resolved[i][0] if i in resolved else name for i, name in enumerate(names)]
    rules = {full: rule for full, rule in resolved.values()}
    return cut.with_columns(pl.Series("name", renamed, dtype=cut.schema["name"])), rules


def unpaired_cut_names(diff: pl.DataFrame, other: list[str], side: str) -> list[tuple[str, int]]:
    """The names ``side`` (``before``/``after``) holds cut short that the diff left unpaired, each
    with how many whole names of the other side (``other``) it starts: why nothing paired them."""
    lonely = "removed" if side == "before" else "added"
    column = "name" if side == "before" or "name_after" not in diff.columns else "name_after"
    whole = [n for n in other if cut_prefix(n) is None]
    out = []
    for name in diff.filter(pl.col("status") == lonely)[column].drop_nulls().unique(maintain_order=True).to_list():
        start = cut_prefix(name)
        if start is not None:
            out.append((name, sum(1 for w in whole if w.startswith(start))))
    return out


def status_expr(before: str, after: str, delta: str, tolerance_pct: float) -> pl.Expr:
    """The status of each row from its presence on each side and the delta of its main figure."""
    within = pl.col(delta).abs() <= pl.col(before).abs() * (tolerance_pct / 100.0)
    return (
        pl.when(pl.col("name_before").is_null())
        .then(pl.lit("added"))
        .when(pl.col("name_after").is_null())
        .then(pl.lit("removed"))
        .when(within)
        .then(pl.lit("unchanged"))
        .when(pl.col(delta) > 0)
        .then(pl.lit("increased"))
        .otherwise(pl.lit("decreased"))
        .alias("status")
    )


def _pct(delta: str, before: str) -> pl.Expr:
    """``delta`` as a percentage of ``before``; null where before is zero."""
    return pl.when(pl.col(before) != 0).then(pl.col(delta) / pl.col(before) * 100.0).alias("delta_pct")


def repeated_names(frame: pl.DataFrame) -> int:
    """How many names a view holds in more than one row (text tables cut long names short)."""
    return frame.filter(pl.col("name").is_duplicated())["name"].n_unique()


def one_row_per_name(frame: pl.DataFrame, values: tuple[str, ...]) -> pl.DataFrame:
    """``frame`` with the rows of a repeated name summed into one (first row's order and kind)."""
    if not repeated_names(frame):
        return frame
    present = [v for v in values if v in frame.columns]
    others = [c for c in frame.columns if c != "name" and c not in present]
    return frame.group_by("name", maintain_order=True).agg(
        *(pl.col(v).sum() for v in present), *(pl.col(c).first() for c in others)
    )


def _side(frame: pl.DataFrame, values: tuple[str, ...], suffix: str, steps: int | None) -> pl.DataFrame:
    """``frame``'s values renamed ``<value>_<suffix>`` (divided by ``steps`` when given)."""
    frame = one_row_per_name(frame, values)
    exprs = []
    for value in values:
        column = pl.col(value) if value in frame.columns else pl.lit(None, dtype=pl.Float64)
        if steps:
            column = column.cast(pl.Float64) / steps
        exprs.append(column.alias(f"{value}_{suffix}"))
    return frame.select(pl.col("name").alias(f"name_{suffix}"), *exprs)


def _joined(
    before: pl.DataFrame,
    after: pl.DataFrame,
    values: tuple[str, ...],
    match: str,
    steps: tuple[int, int] | None,
    extra: tuple[str, ...] = (),
) -> pl.DataFrame:
    """The pairs of names with both sides' values (0 where a side lacks the name, null where it holds
    the value as unknown); rows a table cut
    short are first given the whole name they stand for where it is certain (:func:`resolve_cut_rows`)."""
    before, rules = resolve_cut_rows(before, after, values + extra)
    after, rules_after = resolve_cut_rows(after, before, values + extra)
    rules |= rules_after
    pairs = pair_names(before["name"].unique(maintain_order=True).to_list(),
                       after["name"].unique(maintain_order=True).to_list(), match)
    if rules:  # paired as equal names now, by the rule that named them
        rule = pl.col("name_before").replace_strict(rules, default=None, return_dtype=pl.String)
        same = pl.col("name_before") == pl.col("name_after")
        ruled = pl.when(same & rule.is_not_null()).then(rule).otherwise("match_rule")
        pairs = pairs.with_columns(ruled.alias("match_rule"))
    b = _side(before, values + extra, "before", steps[0] if steps else None)
    a = _side(after, values + extra, "after", steps[1] if steps else None)
    joined = pairs.join(b, on="name_before", how="left").join(a, on="name_after", how="left")
    # A side that lacks the name has 0 of it; a value a side holds as unknown (null) stays unknown.
    return joined.with_columns(
        pl.coalesce("name_before", "name_after").alias("name"),
        *(
            pl.when(pl.col(f"name_{s}").is_null()).then(0).otherwise(pl.col(f"{v}_{s}")).alias(f"{v}_{s}")
            for v in values
            for s in ("before", "after")
        ),
    )


def _finish(frame: pl.DataFrame, columns: list[str], match: str) -> pl.DataFrame:
    if match == "normalized":
        columns = [*columns, "match_rule", "name_after"]
    return frame.sort([pl.col("delta_us").abs(), pl.col("name")], descending=[True, False]).select(columns)


def diff_kernels(
    before: pl.DataFrame,
    after: pl.DataFrame,
    *,
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT,
    match: str = "exact",
    steps: tuple[int, int] | None = None,
) -> pl.DataFrame:
    """Kernel tables compared: ``name, calls_before, calls_after, total_us_before, total_us_after,
    delta_us, delta_pct, status`` (+ ``match_rule, name_after`` with ``match="normalized"``).

    ``steps``: each side's step count; its calls and totals are divided by it (``--per-step``).
    """
    joined = _joined(before, after, ("calls", "total_us"), match, steps)
    frame = joined.with_columns((pl.col("total_us_after") - pl.col("total_us_before")).alias("delta_us"))
    frame = frame.with_columns(
        _pct("delta_us", "total_us_before"), status_expr("total_us_before", "total_us_after", "delta_us", tolerance_pct)
    )
    columns = ["name", "calls_before", "calls_after", "total_us_before", "total_us_after", "delta_us", "delta_pct"]
    return _finish(frame, [*columns, "status"], match)


#: The operator figures compared, each with its own delta column.
OP_VALUES: tuple[str, ...] = ("calls", "host_self_us", "device_self_us", "device_total_us")


def diff_ops(
    before: pl.DataFrame,
    after: pl.DataFrame,
    *,
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT,
    match: str = "exact",
    steps: tuple[int, int] | None = None,
) -> pl.DataFrame:
    """Operator tables compared: ``calls``, ``host_self_us``, ``device_self_us`` and
    ``device_total_us`` before and after, each time with its ``*_delta_us``.

    ``delta_us`` (which sorts the rows and gives the status) is the change of the operator's own
    time on both sides of the launch, host self + device self: a slower CPU dispatch and a
    slower kernel both show.  ``match`` pairs names as :func:`pair_names` does.
    """
    joined = _joined(before, after, OP_VALUES, match, steps)
    kinds = ("kind",) if "kind" in before.columns or "kind" in after.columns else ()
    if kinds:
        before, after = one_row_per_name(before, OP_VALUES), one_row_per_name(after, OP_VALUES)
        kind_b = before.select(pl.col("name").alias("name_before"), pl.col("kind").cast(pl.String).alias("kind_b"))
        kind_a = after.select(pl.col("name").alias("name_after"), pl.col("kind").cast(pl.String).alias("kind_a"))
        joined = joined.join(kind_b, on="name_before", how="left").join(kind_a, on="name_after", how="left")
        joined = joined.with_columns(pl.coalesce("kind_b", "kind_a").alias("kind"))
    deltas = [
        (pl.col(f"{v}_after") - pl.col(f"{v}_before")).alias(f"{v.removesuffix('_us')}_delta_us")
        for v in OP_VALUES[1:]
    ]
    frame = joined.with_columns(
        *deltas,
        # GPU work no operator launched has no host time: its own time is its device time.
        (pl.col("host_self_us_before").fill_null(0) + pl.col("device_self_us_before")).alias("self_us_before"),
        (pl.col("host_self_us_after").fill_null(0) + pl.col("device_self_us_after")).alias("self_us_after"),
    ).with_columns((pl.col("self_us_after") - pl.col("self_us_before")).alias("delta_us"))
    frame = frame.with_columns(
        _pct("delta_us", "self_us_before"), status_expr("self_us_before", "self_us_after", "delta_us", tolerance_pct)
    )
    columns = ["name", *kinds, "calls_before", "calls_after"]
    for value in OP_VALUES[1:]:
        columns += [f"{value}_before", f"{value}_after", f"{value.removesuffix('_us')}_delta_us"]
    return _finish(frame, [*columns, "delta_us", "delta_pct", "status"], match)


def step_means(steps: pl.DataFrame) -> dict[str, float]:
    """The mean step: ``duration`` and each category's µs, averaged over the steps table's rows."""
    n = steps.height
    columns = ["duration_us", *(f"{c}_us" for c in CATEGORIES)]
    return {c.removesuffix("_us"): (float(steps[c].sum()) / n if n else 0.0) for c in columns}


def diff_steps(
    before: pl.DataFrame, after: pl.DataFrame, *, tolerance_pct: float = DEFAULT_TOLERANCE_PCT
) -> pl.DataFrame:
    """The mean step compared: one row for the whole step, one per category (in the steps view's
    order): ``name, category, mean_us_before, mean_us_after, delta_us, delta_pct, status``."""
    mean_b, mean_a = step_means(before), step_means(after)
    keys = ["duration", *CATEGORIES]
    frame = pl.DataFrame(
        {
            "name": ["Step", *(CATEGORY_LABELS[c] for c in CATEGORIES)],
            "category": keys,
            "mean_us_before": [mean_b[k] for k in keys],
            "mean_us_after": [mean_a[k] for k in keys],
        }
    ).with_columns(
        (pl.col("mean_us_after") - pl.col("mean_us_before")).alias("delta_us"),
        pl.col("name").alias("name_before"),
        pl.col("name").alias("name_after"),
    )
    frame = frame.with_columns(
        _pct("delta_us", "mean_us_before"), status_expr("mean_us_before", "mean_us_after", "delta_us", tolerance_pct)
    )
    return frame.select("name", "category", "mean_us_before", "mean_us_after", "delta_us", "delta_pct", "status")


def diff_launch_paths(
    before: pl.DataFrame, after: pl.DataFrame, *, tolerance_pct: float = DEFAULT_TOLERANCE_PCT
) -> pl.DataFrame:
    """One kernel's launch paths on both sides (each a frame of ``Profile.kernel_launches``: ``op``,
    ``op_chain``, ``calls``, ``total_us``), one row per operator chain (the Python stacks under one
    chain summed): ``name`` (the chain), ``calls_before``, ``calls_after``, ``total_us_before``,
    ``total_us_after``, ``delta_us``, ``delta_pct``, ``status``, ``op`` (the launching operator).

    Chains pair by equality (``ProfilerStep*`` already folds the step number); a chain on one side
    only is ``added`` or ``removed``."""

    def by_chain(frame: pl.DataFrame) -> pl.DataFrame:
        return (
            frame.group_by("op_chain", maintain_order=True)
            .agg(pl.col("op").first(), pl.col("calls").sum(), pl.col("total_us").sum())
            .rename({"op_chain": "name"})
        )

    b, a = by_chain(before), by_chain(after)
    frame = diff_kernels(b.drop("op"), a.drop("op"), tolerance_pct=tolerance_pct)
    ops = pl.concat([b.select("name", "op"), a.select("name", "op")]).unique("name", keep="first")
    joined = frame.join(ops, on="name", how="left")
    return joined.sort([pl.col("delta_us").abs(), pl.col("name")], descending=[True, False])

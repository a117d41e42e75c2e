"""A roofline drawn in the terminal (inert Rich Text): operators by arithmetic intensity
(``flops_per_byte``, x) and achieved TFLOP/s (y), both on log scales, under the two roofs.

The memory roof (``╱``) rises with the bandwidth (TFLOP/s = FLOP/B × TB/s) up to the ridge point,
the compute roof (``─``) is flat at the peak; ``┼`` marks the ridge.  The operators with the most
kernel time are drawn as ``1``..``9`` (largest first) and listed under the chart; the rest as
``·``.  Everything reads without colour (NO_COLOR): glyphs carry the meaning, colour only helps.
Pure functions of an efficiency frame.
"""

from __future__ import annotations

import math

import polars as pl
from rich.text import Text

from ...frames import fmt_us
from ...report.wording import plural
from ...sanitize import clean

MEMORY_ROOF, COMPUTE_ROOF, RIDGE, OTHER = "╱", "─", "┼", "·"
ROOF_STYLE = "#e8a33c"
POINT_STYLE = "bold #4c9be8"
AXIS_WIDTH = 8
NUMBERED = 9


def chart_peaks(frame: pl.DataFrame) -> tuple[float | None, float | None]:
    """The roofs to draw: the compute peak carrying the most kernel time among the drawn rows (the
    precision of the points on the chart, not of rows without FLOPs that are not drawn), the
    memory peak."""
    peak_tflops, peak_tb_s, _precision = chart_roof(frame)
    return peak_tflops, peak_tb_s


def chart_roof(frame: pl.DataFrame) -> tuple[float | None, float | None, str | None]:
    """:func:`chart_peaks` and the precision of that compute roof (None where not known)."""
    known = frame.filter(pl.col("peak_tflops").is_not_null())
    if known.height == 0:
        return None, None, None
    drawn = known.filter((pl.col("tflops_s") > 0) & (pl.col("flops_per_byte") > 0))
    rows = drawn if drawn.height else known
    precision = pl.col("precision") if "precision" in rows.columns else pl.lit(None, dtype=pl.String)
    peak = (
        rows.group_by("peak_tflops")
        .agg(pl.col("kernel_us").sum(), precision.drop_nulls().mode().first().alias("precision"))
        .sort(["kernel_us", "peak_tflops"], descending=[True, False])
    )
    return float(peak["peak_tflops"][0]), float(rows["peak_tb_s"][0]), peak["precision"][0]


def _log_range(values: list[float], floor: float) -> tuple[float, float]:
    positive = [v for v in values if v > 0]
    lo = math.floor(math.log10(min(positive) if positive else floor))
    hi = math.ceil(math.log10(max(positive) if positive else floor * 10))
    return float(lo), float(max(hi, lo + 1))


def _tick(value: float) -> str:
    """10^k as text: 0.001, 0.1, 10, 1k ..."""
    if value >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def roofline_chart(frame: pl.DataFrame, width: int, height: int) -> Text:
    """The chart of an efficiency frame, ``width`` x ``height`` cells (legend lines included)."""
    peak_tflops, peak_tb_s = chart_peaks(frame)
    rows_by_time = frame.sort("kernel_us", descending=True)
    drawn = rows_by_time.filter((pl.col("tflops_s") > 0) & (pl.col("flops_per_byte") > 0))
    if drawn.height == 0:
        return Text("roofline: no operator with FLOPs to draw", style="italic")
    legend_rows = min(drawn.height, 3 if height >= 14 else 1)
    plot_rows = max(height - 2 - legend_rows, 4)
    plot_cols = max(width - AXIS_WIDTH - 1, 16)
    xs = drawn["flops_per_byte"].to_list()
    ys = drawn["tflops_s"].to_list()
    ridge = peak_tflops / peak_tb_s if peak_tflops and peak_tb_s else None
    x_lo, x_hi = _log_range([*xs, ridge * 4 if ridge else 0.0], 1.0)
    y_lo, y_hi = _log_range([*ys, peak_tflops or 0.0], 1.0)

    def col(x: float) -> int:
        return min(max(int((math.log10(x) - x_lo) / (x_hi - x_lo) * (plot_cols - 1) + 0.5), 0), plot_cols - 1)

    def row(y: float) -> int:  # 0 at the top
        level = (math.log10(y) - y_lo) / (y_hi - y_lo) * (plot_rows - 1)
        return min(max(plot_rows - 1 - int(level + 0.5), 0), plot_rows - 1)

    grid = [[" "] * plot_cols for _ in range(plot_rows)]
    styles: dict[tuple[int, int], str] = {}
    if peak_tflops and peak_tb_s:
        for c in range(plot_cols):
            x = 10 ** (x_lo + c / (plot_cols - 1) * (x_hi - x_lo))
            roof = min(peak_tflops, x * peak_tb_s)
            if roof < 10**y_lo:
                continue
            r = row(roof)
            glyph = COMPUTE_ROOF if x * peak_tb_s >= peak_tflops else MEMORY_ROOF
            grid[r][c] = glyph
            styles[(r, c)] = ROOF_STYLE
        if ridge:
            grid[row(peak_tflops)][col(ridge)] = RIDGE
    for index, (x, y) in enumerate(zip(xs, ys, strict=True)):
        r, c = row(y), col(x)
        if index < NUMBERED:
            if not grid[r][c].isdigit() or int(grid[r][c]) > index + 1:
                grid[r][c] = str(index + 1)
                styles[(r, c)] = POINT_STYLE
        elif not grid[r][c].isdigit():
            grid[r][c] = OTHER
    out = Text()
    for r in range(plot_rows):
        y_label = ""
        if r == 0:
            y_label = _tick(10**y_hi)
        elif r == plot_rows - 1:
            y_label = _tick(10**y_lo)
        out.append(f"{y_label:>{AXIS_WIDTH - 1}} │")
        for c in range(plot_cols):
            out.append(grid[r][c], style=styles.get((r, c), ""))
        out.append("\n")
    axis = f"{'TFLOP/s':>{AXIS_WIDTH - 1}} └" + "─" * plot_cols
    out.append(axis + "\n")
    low, high = _tick(10**x_lo), f"{_tick(10**x_hi)} FLOP/B"
    out.append(" " * AXIS_WIDTH + low + " " * max(plot_cols - len(low) - len(high), 1) + high)
    for index, item in enumerate(drawn.head(legend_rows).iter_rows(named=True)):
        share = (
            f"{item['pct_of_roofline']:.0f}% of roof"
            if item["pct_of_roofline"] is not None
            else "overestimate, no bound"
            if (item.get("note") or "").startswith("overestimate")
            else "no peak"
        )
        line = (
            f"\n {index + 1} {item['tflops_s']:.1f} TFLOP/s, {share} ({item['bound'] or '?'}), "
            f"{fmt_us(item['kernel_us'])} · {clean(item['name'])} {clean(item['input_dims'] or '')}"
        )
        out.append(line[: width + 1])
    return out


def chart_caption(frame: pl.DataFrame, device: str | None, peak_name: str | None) -> Text:
    """The line over the chart: the device, its roofs, what the glyphs mean."""
    peak_tflops, peak_tb_s, precision = chart_roof(frame)
    if peak_tflops is None or peak_tb_s is None:
        where = f"{clean(device)}: " if device else ""
        return Text(f"{where}no peak known for this device (profview export --peak-tflops/--peak-tbs)", style="dim")
    skipped = frame.filter(~((pl.col("tflops_s") > 0) & (pl.col("flops_per_byte") > 0))).height
    note = f" · {plural(skipped, 'row')} not drawn (no FLOPs or no bytes)" if skipped else ""
    name = clean(peak_name or device or "")
    return Text(
        f"{name} · {f'{precision} ' if precision else ''}{peak_tflops:g} TFLOP/s {COMPUTE_ROOF} "
        f"{peak_tb_s:g} TB/s {MEMORY_ROOF} · "
        f"ridge {peak_tflops / peak_tb_s:.0f} FLOP/B {RIDGE}{note}",
        style="dim",
    )

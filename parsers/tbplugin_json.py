"""The TensorBoard profiler plugin's JSON views (one JSON document per line, several runs).

A run starts with its overview document (``steps``, ``performance``, ``recommendations``,
``environments``); the operator pie, operator table, kernel table and kernel pie follow.  The
overview's step rows carry a tooltip per value naming its category; the column headers list
Communication before Memset while the values come Memset first, so categories are taken from the
tooltips (the headers are only a fallback).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

import orjson
import polars as pl

from ..frames import CATEGORIES, CATEGORY_LABELS, OPERATOR_COLUMNS, STEP_COLUMNS, conform_kernels, with_share

LABEL_TO_CATEGORY = {label: category for category, label in CATEGORY_LABELS.items()}
TOOLTIP_VALUE = re.compile(r"<b>([^<:]+):\s*([-\d.]+)us</b>")
TOOLTIP_TOTAL = re.compile(r"Total:\s*([-\d.]+)us")


@dataclass
class PluginRun:
    """The frames of one run."""

    name: str
    steps: pl.DataFrame  # every run opens with the overview document, which holds the steps
    overview: dict[str, Any] = field(default_factory=dict)
    ops: pl.DataFrame | None = None
    kernels: pl.DataFrame | None = None


def looks_like_plugin_json(text: str) -> bool:
    """Whether the first line is the plugin's overview document."""
    first = text.lstrip().split("\n", 1)[0]
    return first.startswith("{") and '"steps"' in first and '"performance"' in first


def _documents(text: str) -> list[Any]:
    docs = []
    for line in text.splitlines():
        if line.strip():
            try:
                docs.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
    return docs


def step_frame(steps: dict[str, Any]) -> pl.DataFrame:
    """Step rows with each value placed by its tooltip's category name."""
    headers = [c.get("name") for c in steps.get("columns", [])]
    records = []
    for row in steps.get("rows", []):
        values = {c: 0.0 for c in CATEGORIES}
        total = None
        for index, cell in enumerate(row[1:], start=1):
            if not isinstance(cell, (int, float)):
                continue
            tooltip = row[index + 1] if index + 1 < len(row) and isinstance(row[index + 1], str) else ""
            label = TOOLTIP_VALUE.search(tooltip)
            name = label.group(1).strip() if label else headers[index] if index < len(headers) else None
            if name in LABEL_TO_CATEGORY:
                values[LABEL_TO_CATEGORY[name]] = float(cell)
            found = TOOLTIP_TOTAL.search(tooltip)
            total = float(found.group(1)) if found else total
        step = str(row[0])
        records.append(
            {
                "step": int(step) if step.isdigit() else None,
                "name": f"step {step}",
                "start_us": None,
                "duration_us": total if total is not None else sum(values.values()),
                **{f"{c}_us": v for c, v in values.items()},
            }
        )
    schema = {c: pl.Float64 for c in STEP_COLUMNS} | {"step": pl.Int64, "name": pl.String}
    return pl.DataFrame(records, schema=schema).select(STEP_COLUMNS)


def ops_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    frame = pl.DataFrame(
        {
            "name": [str(r.get("name", "")) for r in rows],
            "kind": ["operator"] * len(rows),
            "calls": [int(r.get("calls", 0) or 0) for r in rows],
            "host_self_us": [float(r.get("host_self_duration", 0) or 0) for r in rows],
            "host_total_us": [float(r.get("host_total_duration", 0) or 0) for r in rows],
            "device_self_us": [float(r.get("device_self_duration", 0) or 0) for r in rows],
            "device_total_us": [float(r.get("device_total_duration", 0) or 0) for r in rows],
        }
    )
    return frame.select(OPERATOR_COLUMNS)


def kernels_frame(table: dict[str, Any]) -> pl.DataFrame:
    names = [c.get("name") for c in table.get("columns", [])]
    mapping = {
        "Name": "name",
        "Calls": "calls",
        "Total Duration (us)": "total_us",
        "Mean Duration (us)": "mean_us",
        "Max Duration (us)": "max_us",
        "Min Duration (us)": "min_us",
    }
    columns: dict[str, list[Any]] = {mapping[n]: [] for n in names if n in mapping}
    for row in table.get("rows", []):
        for index, name in enumerate(names):
            if name in mapping:
                columns[mapping[name]].append(row[index])
    frame = pl.DataFrame(columns).with_columns(pl.col("calls").cast(pl.Int64))
    frame = frame.with_columns(
        *(pl.col(c).cast(pl.Float64) for c in ("total_us", "mean_us", "max_us", "min_us") if c in frame.columns)
    )
    return conform_kernels(with_share(frame)).sort("total_us", descending=True)


def plain_text(markup: str) -> str:
    """HTML recommendations as plain text."""
    return html.unescape(re.sub(r"<[^>]+>", " ", markup)).strip()


def parse_plugin_runs(text: str) -> list[PluginRun]:
    """Runs in file order: each overview document opens a new run."""
    runs: list[PluginRun] = []
    for doc in _documents(text):
        if isinstance(doc, dict) and "steps" in doc and "performance" in doc:
            runs.append(PluginRun(name=f"run{len(runs) + 1}", steps=step_frame(doc["steps"]), overview=doc))
        elif not runs:
            continue
        elif isinstance(doc, list) and doc and isinstance(doc[0], dict) and "host_self_duration" in doc[0]:
            runs[-1].ops = ops_frame(doc)
        elif isinstance(doc, dict) and isinstance(doc.get("data"), dict):
            runs[-1].kernels = kernels_frame(doc["data"])
    return runs


def run_metadata(run: PluginRun) -> dict[str, Any]:
    """Average step breakdown, recommendations and environments of a run."""
    overview = run.overview
    average: dict[str, float] = {}
    for block in overview.get("performance", []):
        for child in block.get("children", []):
            if child.get("name") in LABEL_TO_CATEGORY:
                average[LABEL_TO_CATEGORY[child["name"]]] = float(child.get("value", 0))
        if block.get("name") == "Average Step Time":
            average["duration"] = float(block.get("value", 0))
    recommendations = [
        plain_text(item) for item in re.split(r"</li>", overview.get("recommendations", "")) if plain_text(item)
    ]
    environments = {str(e.get("title")): str(e.get("value")) for e in overview.get("environments", [])}
    return {"average_step": average, "hints": recommendations, "environments": environments}

"""Timeline lanes: CPU threads (operators nested by depth) and GPU streams on one time axis.

Each lane holds its events sorted by start, as NumPy arrays, with the property a renderer needs
to query only what is visible: on one lane events hardly overlap (operators of one depth on one
thread are siblings; kernels of one stream run in order), so starts and the running maximum of
ends are both sorted and two binary searches find the events inside a window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from ..trace.model import TraceModel

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the viewer's first screen needs none (profview.lazy_numpy)
    from ... import lazy_numpy as np

#: Lanes per thread: depths 0 .. MAX_DEPTH - 2 get a lane each, everything deeper shares the last
#: one (so every runtime call has a place, and a kernel's launch can always be shown).
MAX_DEPTH = 4


@dataclass
class Lane:
    """One lane: ``label``, ``kind`` (``cpu`` or ``gpu``), events sorted by start.

    ``rows`` are rows of ``model.host`` (cpu lanes) or of ``model.gpu`` (gpu lanes); ``names``
    index ``Lanes.names``; ``style`` per event: 0 operator/kernel, 1 runtime call/memcpy,
    2 memset, 3 communication.
    """

    label: str
    kind: str
    start: np.ndarray
    end: np.ndarray
    rows: np.ndarray
    names: np.ndarray
    style: np.ndarray
    reach: np.ndarray = field(default_factory=lambda: np.zeros(0))  # running max of end: sorted

    def __post_init__(self) -> None:
        self.reach = np.maximum.accumulate(self.end) if len(self.end) else self.end

    def visible(self, lo: float, hi: float) -> slice:
        """The events overlapping [lo, hi): one binary search on ends, one on starts."""
        first = int(np.searchsorted(self.reach, lo, side="right"))
        last = int(np.searchsorted(self.start, hi, side="left"))
        return slice(first, max(first, last))

    def at(self, instant: float) -> int:
        """The event covering ``instant``, or -1."""
        index = int(np.searchsorted(self.start, instant, side="right")) - 1
        return index if index >= 0 and self.end[index] >= instant else -1


@dataclass
class Lanes:
    """All lanes of a trace, and where each host/GPU row sits (lane, position), -1 if nowhere."""

    lanes: list[Lane]
    names: list[str]
    host_lane: np.ndarray
    host_pos: np.ndarray
    gpu_lane: np.ndarray
    gpu_pos: np.ndarray
    span: tuple[float, float] = field(default=(0.0, 0.0))


def host_depths(model: TraceModel) -> np.ndarray:
    """Per host row, the number of enclosing events in its layer (0: outermost)."""
    parent = model.tree.parent
    depth = np.zeros(len(parent), dtype=np.int64)
    node = parent.copy()
    while (alive := node >= 0).any():
        depth += alive
        node = np.where(alive, parent[np.clip(node, 0, None)], -1)
    return depth


def build_lanes(model: TraceModel, comm_backend: pl.Series | None = None) -> Lanes:
    """The lanes of a trace: per thread, one lane per operator depth (runtime calls sit at their
    depth too), then per (device, stream) one lane of GPU work; ``comm_backend`` (per
    ``model.gpu`` row, null: not communication) marks communication kernels."""
    host, gpu = model.host, model.gpu
    depth = host_depths(model)
    names_frame = pl.concat([host.select("name"), gpu.select("name")]).unique(maintain_order=True)
    names = names_frame["name"].to_list()
    code = {name: index for index, name in enumerate(names)}
    host_lane = np.full(host.height, -1, dtype=np.int64)
    host_pos = np.full(host.height, -1, dtype=np.int64)
    gpu_lane = np.full(gpu.height, -1, dtype=np.int64)
    gpu_pos = np.full(gpu.height, -1, dtype=np.int64)
    lanes: list[Lane] = []
    cpu = host.with_columns(pl.Series("depth", np.minimum(depth, MAX_DEPTH - 1))).filter(~pl.col("is_python"))
    name_codes = pl.col("name").replace_strict(code, return_dtype=pl.Int64)
    for (_pid, tid, level), frame in sorted(
        cpu.group_by("pid", "tid", "depth"), key=lambda item: (str(item[0][0]), str(item[0][1]), item[0][2])
    ):
        frame = frame.sort("ts")
        style = frame.select(pl.col("kind").is_in(["runtime", "driver"]).cast(pl.Int8))["kind"].to_numpy()
        lanes.append(
            Lane(
                f"{tid}" + (f" ·{level}" if level else "") + ("+" if level == MAX_DEPTH - 1 else ""),
                "cpu",
                frame["ts"].to_numpy(),
                frame["end"].to_numpy(),
                frame["row"].to_numpy(),
                frame.select(name_codes)["name"].to_numpy(),
                style,
            )
        )
        host_lane[lanes[-1].rows] = len(lanes) - 1
        host_pos[lanes[-1].rows] = np.arange(frame.height)
    comm = comm_backend.is_not_null() if comm_backend is not None else pl.repeat(False, gpu.height, eager=True)
    numbered = gpu.with_row_index("gpu_row").with_columns(comm.alias("is_comm"))
    for (device, stream), frame in sorted(
        numbered.group_by("device", "stream"), key=lambda item: (item[0][0] or -1, item[0][1] or -1)
    ):
        frame = frame.sort("ts")
        style_codes = frame.select(
            pl.when(pl.col("is_comm"))
            .then(3)
            .when(pl.col("kind") == "memcpy")
            .then(1)
            .when(pl.col("kind") == "memset")
            .then(2)
            .otherwise(0)
            .cast(pl.Int8)
        ).to_series()
        lanes.append(
            Lane(
                f"GPU{'?' if device is None else device} s{'?' if stream is None else stream}",
                "gpu",
                frame["ts"].to_numpy(),
                frame["end"].to_numpy(),
                frame["gpu_row"].cast(pl.Int64).to_numpy(),
                frame.select(name_codes)["name"].to_numpy(),
                style_codes.to_numpy(),
            )
        )
        gpu_lane[lanes[-1].rows] = len(lanes) - 1
        gpu_pos[lanes[-1].rows] = np.arange(frame.height)
    return Lanes(lanes, names, host_lane, host_pos, gpu_lane, gpu_pos, (model.span_start, model.span_end))


def gpu_busy_between(lanes: list[Lane], lo: float, hi: float) -> float:
    """µs of [lo, hi) with GPU work on any GPU lane: the union of the GPU events clipped to the
    window (GPU busy, the Overview's figure, over a window instead of the whole trace)."""
    starts, ends = [], []
    for lane in lanes:
        if lane.kind != "gpu":
            continue
        window = lane.visible(lo, hi)
        starts.append(np.maximum(lane.start[window], lo))
        ends.append(np.minimum(lane.end[window], hi))
    if not starts:
        return 0.0
    start, end = np.concatenate(starts), np.concatenate(ends)
    if not len(start):
        return 0.0
    order = np.argsort(start, kind="stable")
    start, end = start[order], np.maximum.accumulate(end[order])
    # each event adds what it reaches beyond everything that started before it
    reach = np.concatenate(([lo], end[:-1]))
    return float(np.clip(end - np.maximum(start, reach), 0, None).sum())

"""Views grouped by name and shape order rows of equal time by their keys, so that one trace's
export is the same file from run to run (before, Polars' group_by order leaked into the ties:
three exports of the efficiency view of hta_sampled_rank-0 were three different files)."""

from __future__ import annotations

import polars as pl
import pytest
from support import loaded

from profview.analysis.trace.communication import host_collective_kinds

TRACE = "hta_sampled_rank-0.json.gz"


def _ties(frame: pl.DataFrame, time: list[str]) -> int:
    """Rows that share their time columns with another row (what the keys must order)."""
    return int(frame.select(pl.struct(time).is_duplicated().sum()).item())


def _ordered(frame: pl.DataFrame, time: list[str], keys: list[str]) -> bool:
    order = [*time, *keys]
    return frame.equals(frame.sort(order, descending=[True] * len(time) + [False] * len(keys), maintain_order=True))


@pytest.mark.parametrize(
    ("view", "time", "keys"),
    [
        ("kernels_by_shape", ["total_us"], ["name", "grid", "block", "registers", "shared_mem"]),
        ("ops_by_shape", ["device_total_us", "host_total_us"], ["name", "input_dims"]),
        ("efficiency", ["kernel_us"], ["name", "input_dims", "input_types"]),
    ],
)
def test_equal_times_are_ordered_by_their_keys(view: str, time: list[str], keys: list[str]) -> None:
    profile = loaded(TRACE)
    frame = {
        "kernels_by_shape": lambda: profile.kernels(by_shape=True),
        "ops_by_shape": lambda: profile.ops(by_shapes=True),
        "efficiency": profile.efficiency,
    }[view]()
    assert _ties(frame, time) >= 10  # the sample has ties to order (else this test could not fail)
    assert _ordered(frame, time, keys)


def test_host_collectives_of_equal_time_are_ordered_by_backend_and_type() -> None:
    # Two collective types of equal total time on one backend: the type decides their order.
    host = pl.DataFrame(
        {
            "is_op": [True] * 4,
            "name": ["gloo:broadcast", "gloo:all_reduce", "gloo:broadcast", "gloo:all_reduce"],
            "dur": [5.0, 5.0, 5.0, 5.0],
        }
    )
    for rows in (host, host.reverse()):
        table = host_collective_kinds(rows)
        assert table["collective_name"].to_list() == sorted(table["collective_name"].to_list())


def test_critical_path_names_of_equal_time_are_ordered_by_kind_and_name() -> None:
    frame = loaded(TRACE).critical_path_names()
    time = ["on_path_us", "total_us"]
    assert _ties(frame, time) >= 10
    assert _ordered(frame, time, ["kind", "name"])

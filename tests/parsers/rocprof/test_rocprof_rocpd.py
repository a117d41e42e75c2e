"""rocprofv3 rocpd databases: built here from rocprofv3 JSON documents by an independent converter
that follows rocprofiler-sdk's public rocpd schema (version 3: GUID-suffixed tables, a view of the
plain name over each), then read by profview and checked against the JSON reader and against plain
sqlite3.  No rocpd database written by rocprofv3 itself was available."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from rocprof_witness import SHARED_FILE, assert_traced_run_links, document, refused, traced_run
from support import run_cli

import profview

UUID = "_0123abcd_4567_89ef_0123_456789abcdef"
AGENT_TYPES = {1: "CPU", 2: "GPU"}
#: Each table the converter writes, with its columns (names and meaning from the public schema).
TABLES = {
    "rocpd_metadata": ("id", "tag", "value"),
    "rocpd_string": ("id", "guid", "string"),
    "rocpd_info_node": ("id", "guid", "hash", "machine_id", "hostname"),
    "rocpd_info_process": ("id", "guid", "nid", "ppid", "pid", "command"),
    "rocpd_info_thread": ("id", "guid", "nid", "ppid", "pid", "tid"),
    "rocpd_info_agent": (
        "id", "guid", "nid", "pid", "type", "absolute_index", "logical_index", "type_index", "name",
        "product_name", "extdata",
    ),
    "rocpd_info_queue": ("id", "guid", "nid", "pid", "name"),
    "rocpd_info_stream": ("id", "guid", "nid", "pid", "name"),
    "rocpd_info_kernel_symbol": (
        "id", "guid", "nid", "pid", "code_object_id", "kernel_name", "display_name", "extdata",
    ),
    "rocpd_event": ("id", "guid", "category_id", "correlation_id"),
    "rocpd_region": ("id", "guid", "nid", "pid", "tid", "start", "end", "name_id", "event_id"),
    "rocpd_kernel_dispatch": (
        "id", "guid", "nid", "pid", "tid", "agent_id", "kernel_id", "dispatch_id", "queue_id", "stream_id",
        "start", "end", "private_segment_size", "group_segment_size", "workgroup_size_x", "workgroup_size_y",
        "workgroup_size_z", "grid_size_x", "grid_size_y", "grid_size_z", "region_name_id", "event_id",
    ),
    "rocpd_memory_copy": (
        "id", "guid", "nid", "pid", "tid", "start", "end", "name_id", "dst_agent_id", "src_agent_id", "size",
        "queue_id", "stream_id", "event_id",
    ),
}  # fmt: skip


class Converter:
    """A rocpd database filled from a rocprofv3 JSON document, a row at a time."""

    def __init__(self, path: Path, skip: tuple[str, ...] = ()) -> None:
        self.db = sqlite3.connect(path)
        self.rows: dict[str, list[tuple[Any, ...]]] = {name: [] for name in TABLES}
        self.strings: dict[str, int] = {}
        self.skip = skip

    def string(self, text: str) -> int:
        if text not in self.strings:
            self.strings[text] = len(self.strings) + 1
            self.rows["rocpd_string"].append((self.strings[text], "g", text))
        return self.strings[text]

    def event(self, category: str, correlation: int) -> int:
        rows = self.rows["rocpd_event"]
        rows.append((len(rows) + 1, "g", self.string(category), correlation))
        return len(rows)

    def convert(self, doc: dict[str, Any]) -> None:
        self.rows["rocpd_metadata"].append((1, "schema_version", "3"))
        self.rows["rocpd_info_node"].append((1, "g", 1, "machine", "host"))
        for number, process in enumerate(doc["rocprofiler-sdk-tool"], start=1):
            self.process(number, process)

    def process(self, number: int, process: dict[str, Any]) -> None:
        meta = process["metadata"]
        self.rows["rocpd_info_process"].append((number, "g", 1, meta.get("ppid"), meta["pid"], "run"))
        kinds = process["strings"]["buffer_records"]
        threads: dict[int, int] = {}

        def thread(tid: int) -> int:
            if tid not in threads:
                rows = self.rows["rocpd_info_thread"]
                rows.append((len(rows) + 1, "g", 1, meta["pid"], number, tid))
                threads[tid] = len(rows)
            return threads[tid]

        agents = {}
        for agent in process["agents"]:
            handle = agent["id"]["handle"]
            agents[handle] = handle
            extdata = json.dumps({"cu_count": agent.get("cu_count"), "wave_front_size": agent.get("wave_front_size")})
            self.rows["rocpd_info_agent"].append(
                (handle, "g", 1, number, AGENT_TYPES.get(agent["type"]), agent.get("node_id"),
                 agent.get("logical_node_id"), agent["logical_node_type_id"], agent.get("name"),
                 agent.get("product_name"), extdata)
            )  # fmt: skip
        for symbol in process["kernel_symbols"]:
            extdata = json.dumps({"formatted_kernel_name": symbol["formatted_kernel_name"]})
            self.rows["rocpd_info_kernel_symbol"].append(
                (symbol["kernel_id"], "g", 1, number, symbol["code_object_id"], symbol["kernel_name"],
                 symbol["truncated_kernel_name"], extdata)
            )  # fmt: skip
        messages = {m["key"]: m["value"] for m in process["strings"].get("marker_api", [])}
        buffers = process["buffer_records"]
        for key in ("hip_api", "hsa_api", "marker_api", "rccl_api"):
            for record in buffers.get(key, []):
                kind = kinds[record["kind"]]
                name = kind["operations"][record["operation"]]
                if key == "marker_api":
                    name = messages.get(record["correlation_id"]["internal"], name)
                rows = self.rows["rocpd_region"]
                rows.append(
                    (len(rows) + 1, "g", 1, number, thread(record["thread_id"]), record["start_timestamp"],
                     record["end_timestamp"], self.string(name),
                     self.event(kind["kind"], record["correlation_id"]["internal"]))
                )  # fmt: skip
        streams: set[int] = set()
        queues: set[int] = set()
        for record in buffers["kernel_dispatch"]:
            info = record["dispatch_info"]
            stream = record.get("stream_id", {}).get("handle", 0)
            queue = info["queue_id"]["handle"]
            streams.add(stream)
            queues.add(queue)
            rows = self.rows["rocpd_kernel_dispatch"]
            rows.append(
                (len(rows) + 1, "g", 1, number, thread(record["thread_id"]), agents[info["agent_id"]["handle"]],
                 info["kernel_id"], info["dispatch_id"], queue, stream, record["start_timestamp"],
                 record["end_timestamp"], info["private_segment_size"], info["group_segment_size"],
                 info["workgroup_size"]["x"], info["workgroup_size"]["y"], info["workgroup_size"]["z"],
                 info["grid_size"]["x"], info["grid_size"]["y"], info["grid_size"]["z"], None,
                 self.event(kinds[record["kind"]]["kind"], record["correlation_id"]["internal"]))
            )  # fmt: skip
        for record in buffers.get("memory_copy", []):
            kind = kinds[record["kind"]]
            rows = self.rows["rocpd_memory_copy"]
            rows.append(
                (len(rows) + 1, "g", 1, number, thread(record["thread_id"]), record["start_timestamp"],
                 record["end_timestamp"], self.string(kind["operations"][record["operation"]]),
                 record["dst_agent_id"]["handle"], record["src_agent_id"]["handle"], record["bytes"], None, None,
                 self.event(kind["kind"], record["correlation_id"]["internal"]))
            )  # fmt: skip
        self.rows["rocpd_info_stream"] += [(s, "g", 1, number, f"stream {s}") for s in sorted(streams)]
        self.rows["rocpd_info_queue"] += [(q, "g", 1, number, f"queue {q}") for q in sorted(queues)]

    def write(self) -> None:
        for name, columns in TABLES.items():
            if name in self.skip:
                continue
            quoted = ", ".join(f'"{c}"' for c in columns)
            self.db.execute(f'CREATE TABLE "{name}{UUID}" ({quoted})')
            self.db.execute(f'CREATE VIEW "{name}" AS SELECT * FROM "{name}{UUID}"')
            marks = ", ".join("?" * len(columns))
            self.db.executemany(f'INSERT INTO "{name}{UUID}" VALUES ({marks})', self.rows[name])
        self.db.commit()
        self.db.close()


def convert(doc: dict[str, Any], path: Path, skip: tuple[str, ...] = ()) -> Path:
    """``doc`` written as a rocpd database at ``path`` (without the ``skip`` tables)."""
    converter = Converter(path, skip)
    converter.convert(doc)
    converter.write()
    return path


def kernel_rows(profile: profview.Profile) -> dict[str, tuple[int, float, float, float, float]]:
    return {
        r["name"]: (r["calls"], r["total_us"], r["mean_us"], r["min_us"], r["max_us"])
        for r in profile.kernels().iter_rows(named=True)
    }


def test_the_shared_run_as_a_database_gives_the_json_kernel_table(shared_dir: Path, tmp_path: Path) -> None:
    assert SHARED_FILE.is_file(), f"{SHARED_FILE} is absent"
    db = convert(document(SHARED_FILE), tmp_path / "run.db")
    before = db.read_bytes()
    from_db = profview.load(db, use_cache=False)
    assert from_db.format == "rocprofv3 rocpd database"
    json_profile = profview.load(SHARED_FILE, use_cache=False)
    from_json = kernel_rows(json_profile)
    ours = kernel_rows(from_db)
    assert len(ours) == 80 and sum(v[0] for v in ours.values()) == 43_915
    assert ours.keys() == from_json.keys()
    for name, figures in ours.items():
        assert figures == pytest.approx(from_json[name], abs=1e-9), name
    # plain sqlite3 over the database, per kernel symbol, witnesses the same figures
    plain = sqlite3.connect(db)
    witness = plain.execute(
        "SELECT json_extract(s.extdata, '$.formatted_kernel_name'), COUNT(*), SUM(k.\"end\" - k.start), "
        'MIN(k."end" - k.start), MAX(k."end" - k.start) FROM rocpd_kernel_dispatch k '
        "JOIN rocpd_info_kernel_symbol s ON s.id = k.kernel_id GROUP BY 1"
    ).fetchall()
    plain.close()
    assert len(witness) == 80
    for name, count, total, low, high in witness:
        calls, total_us, mean_us, min_us, max_us = ours[name]
        assert (calls, total_us, min_us, max_us) == pytest.approx((count, total / 1000, low / 1000, high / 1000))
        assert mean_us == pytest.approx(total / count / 1000)
    assert db.read_bytes() == before  # opened read-only, never written
    keys = ("id", "name", "gcnArchName", "numSms", "warpSize")
    ours_devices = [{k: d[k] for k in keys} for d in from_db.metadata["deviceProperties"]]
    assert len(ours_devices) == 8
    assert ours_devices == [{k: d[k] for k in keys} for d in json_profile.metadata["deviceProperties"]]


def test_hip_calls_and_markers_link_kernels_and_operators(tmp_path: Path) -> None:
    """The same links from a database as from the JSON document it was built from."""
    doc = traced_run()
    assert_traced_run_links(profview.load(convert(doc, tmp_path / "traced.db"), use_cache=False), doc)


def test_the_cli_reads_a_database_and_names_no_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = convert(traced_run(), tmp_path / "traced.db")
    out = tmp_path / "kernels.csv"
    assert run_cli(["export", str(db), "-v", "kernels", "-o", str(out), "--no-cache"]) == 0
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["calls"]) for r in rows] == [2]



def test_a_cut_database_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = convert(traced_run(), tmp_path / "whole.db").read_bytes()
    cut = tmp_path / "cut.db"
    cut.write_bytes(whole[: len(whole) // 2])
    assert "rocpd database" in refused(cut, capsys) or "SQLite" in refused(cut, capsys)


def test_a_missing_table_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = convert(traced_run(), tmp_path / "no_events.db", skip=("rocpd_event",))
    assert "without a rocpd_event table" in refused(db, capsys)


def test_a_missing_column_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = convert(traced_run(), tmp_path / "older.db")
    with sqlite3.connect(db) as connection:
        connection.execute(f'ALTER TABLE "rocpd_kernel_dispatch{UUID}" DROP COLUMN "agent_id"')
    line = refused(db, capsys)
    assert "rocpd_kernel_dispatch has no agent_id column" in line


def test_names_with_control_characters_are_shown_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = traced_run()
    raw = doc["rocprofiler-sdk-tool"][0]
    kernel = raw["buffer_records"]["kernel_dispatch"][0]["dispatch_info"]["kernel_id"]
    for symbol in raw["kernel_symbols"]:
        if symbol["kernel_id"] == kernel:
            symbol["formatted_kernel_name"] = "evil\x1b[2Jkernel\x07"
    raw["strings"]["marker_api"] = [{"key": 100, "value": "step\x1b]0;title\x07"}]
    db = convert(doc, tmp_path / "evil.db")
    assert run_cli(["summary", str(db), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "kernel" in out


def test_the_database_is_left_unlocked(tmp_path: Path) -> None:
    db = convert(traced_run(), tmp_path / "traced.db")
    profview.load(db, use_cache=False)
    assert sorted(os.listdir(tmp_path)) == ["traced.db"]  # no journal or lock file left
    with sqlite3.connect(db, timeout=0) as connection:
        connection.execute("BEGIN EXCLUSIVE")
        connection.rollback()


@pytest.mark.parametrize("at", [0.3, 0.5, 0.7, 0.9])
def test_a_damaged_page_is_a_database_or_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], at: float
) -> None:
    data = bytearray(convert(traced_run(), tmp_path / "whole.db").read_bytes())
    start = int(len(data) * at)
    data[start : start + 512] = bytes(range(256)) * 2
    path = tmp_path / "damaged.db"
    path.write_bytes(bytes(data))
    code = run_cli(["summary", str(path), "--no-cache"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code == 0 or (code == 2 and len(err.strip().splitlines()) == 1), err


def test_a_dispatch_without_times_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = convert(traced_run(), tmp_path / "untimed.db")
    with sqlite3.connect(db) as connection:
        connection.execute(f'UPDATE "rocpd_kernel_dispatch{UUID}" SET start = NULL WHERE id = 1')
    assert "rocpd_kernel_dispatch has 1 row without an integer start or end time" in refused(db, capsys)


def test_two_processes_link_within_each(tmp_path: Path) -> None:
    """A second process reusing the first's correlation ids (unique within a process only): both
    are read, on their own OS pids, and each kernel links to a launch, four for four."""
    doc = traced_run()
    second = json.loads(json.dumps(doc["rocprofiler-sdk-tool"][0]))
    second["metadata"]["pid"] += 1
    for records in second["buffer_records"].values():
        for record in records:
            record["start_timestamp"] += 50_000
            record["end_timestamp"] += 50_000
    doc["rocprofiler-sdk-tool"].append(second)
    profile = profview.load(convert(doc, tmp_path / "two.db"), use_cache=False)
    raw = doc["rocprofiler-sdk-tool"][0]
    names = {s["kernel_id"]: s["formatted_kernel_name"] for s in raw["kernel_symbols"]}
    first = names[raw["buffer_records"]["kernel_dispatch"][0]["dispatch_info"]["kernel_id"]]
    assert profile.launches("hipLaunchKernel").filter(pl.col("name") == first)["calls"].to_list() == [4]
    launched = profile.kernel_launches(first).row(0, named=True)
    assert (launched["op"], launched["calls"]) == ("train_step", 4)
    events = profile.events
    assert events is not None
    pids = set(events.filter(pl.col("kind") == "runtime")["pid"].cast(pl.String).to_list())
    assert pids == {str(raw["metadata"]["pid"]), str(raw["metadata"]["pid"] + 1)}

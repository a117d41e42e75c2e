"""Profiler text formats: detect by content and read the views each fills (:class:`ParsedViews`)."""

from __future__ import annotations

import mmap

from ..errors import ProfviewError
from ..frames import ParsedViews
from .kernel_counts import parse_kernel_counts
from .paddle_summary import looks_like_paddle, parse_paddle_summary
from .tbplugin_json import looks_like_plugin_json, parse_plugin_runs, run_metadata
from .torch_table import parse_torch_tables

TRIED = (
    "Nsight Systems SQLite export, rocprofv3 JSON, Chrome-trace JSON, TensorBoard-plugin JSON, Paddle profiler "
    "summary, PyTorch key_averages table, kernel-count list, PyTorch memory snapshot"
)


def read_plugin_views(path: str, text: str, warnings: list[str], run: str | None) -> ParsedViews:
    """One run of a TensorBoard-plugin JSON file (the first unless ``run`` names another)."""
    runs = parse_plugin_runs(text)
    if not runs:
        raise ProfviewError(path, "TensorBoard-plugin JSON without an overview document")
    names = [r.name for r in runs]
    chosen = runs[0]
    if run is not None:
        matches = [r for r in runs if run in (r.name, r.name.removeprefix("run"))]
        if not matches:
            raise ProfviewError(path, f"no run {run!r} (runs: {', '.join(names)})")
        chosen = matches[0]
    tables = {"steps": chosen.steps}
    missing = {"launches": "the TensorBoard plugin's views do not link operators to kernels"}
    for view, frame in (("ops", chosen.ops), ("kernels", chosen.kernels)):
        if frame is not None:
            tables[view] = frame
        else:
            missing[view] = f"this run has no {view} table"
    return ParsedViews(
        format=f"TensorBoard-plugin JSON, {chosen.name} of {len(runs)}",
        tables=tables,
        missing=missing,
        metadata=run_metadata(chosen),
        warnings=list(warnings),
        runs=names,
        run=chosen.name,
    )


#: Byte-order marks of the wide Unicode encodings (UTF-32 first: its LE mark starts as UTF-16's).
_WIDE_MARKS = (
    (b"\xff\xfe\x00\x00", "UTF-32LE"),
    (b"\x00\x00\xfe\xff", "UTF-32BE"),
    (b"\xff\xfe", "UTF-16LE"),
    (b"\xfe\xff", "UTF-16BE"),
)


#: What a JSON document starts with (its first character, or whitespace before it).
_JSON_START = set(b"{[ \t\r\n")


def wide_encoding(head: bytes) -> str | None:
    """The UTF-16/32 encoding of text whose first bytes are ``head`` (its byte-order mark, or the
    zero bytes around a first ASCII character, as RFC 4627 tells them apart), else None."""
    for mark, name in _WIDE_MARKS:
        if head.startswith(mark):
            return name
    if len(head) < 4 or next((byte for byte in head[:4] if byte), 0) not in _JSON_START:  # binary junk
        return None
    zeros = "".join("0" if byte == 0 else "x" for byte in head[:4])
    return {"x000": "UTF-32LE", "000x": "UTF-32BE", "x0x0": "UTF-16LE", "0x0x": "UTF-16BE"}.get(zeros)


def read_text_views(
    path: str, data: bytes | bytearray | mmap.mmap, warnings: list[str], run: str | None = None
) -> ParsedViews:
    """The views of a text format, or ProfviewError naming the formats tried (or the wide
    encoding it is in: profview reads UTF-8)."""
    encoding = wide_encoding(bytes(data[:4]))
    if encoding is not None:
        raise ProfviewError(
            path, f"is text in {encoding}, not UTF-8 (convert it first: iconv -f {encoding} -t UTF-8 FILE > NEW)"
        )
    text = bytes(data).decode("utf-8", "replace")
    if looks_like_plugin_json(text):
        return read_plugin_views(path, text, warnings, run)
    if looks_like_paddle(text):
        tables, metadata = parse_paddle_summary(text)
        missing = {"steps": "the Paddle summary gives totals per event type, not per step"}
        for view in ("ops", "kernels", "launches"):
            if view not in tables:
                missing[view] = f"this Paddle summary has no {view} section"
        return ParsedViews(
            format="Paddle profiler summary",
            tables=tables,
            missing=missing,
            metadata=metadata,
            warnings=list(warnings),
        )
    torch = parse_torch_tables(text)
    counts = parse_kernel_counts(text)
    if torch is not None and torch.ops.height:
        notes = list(warnings)
        if torch.duplicates:
            notes.append(f"{torch.duplicates} rows printed in more than one table were counted once")
        if torch.negative_rows:
            notes.append(f"{torch.negative_rows} rows have negative times (kept as written, flagged 'negative')")
        tables = {"ops": torch.ops, "kernels": torch.kernels}
        # Grouped operator rows: by input shapes, or else by stack (Source Location).
        grouped = torch.ops_by_shapes if torch.ops_by_shapes is not None else torch.ops_by_stack
        if grouped is not None:
            tables["ops_by_shapes"] = grouped
        if torch.kernels.height == 0 and counts is not None:
            tables["kernels"] = counts  # a README's dispatch counts stand in for the kernel view
        missing = {
            "steps": "a key_averages table has no per-step timeline",
            "launches": "a key_averages table does not link operators to the kernels they launched",
        }
        if tables["kernels"].height == 0:
            missing["kernels"] = "this table has no GPU activity rows (device time without CPU time)"
        return ParsedViews(
            format="PyTorch key_averages table",
            tables=tables,
            missing=missing,
            metadata={"self_time_total_us": torch.footer, "tables": torch.tables},
            warnings=notes,
        )
    if counts is not None:
        return ParsedViews(
            format="kernel-count list",
            tables={"kernels": counts},
            missing={
                "ops": "a kernel-count list has no operators",
                "steps": "a kernel-count list has no steps",
                "launches": "a kernel-count list has no launch links",
            },
            warnings=list(warnings),
        )
    from .snapshot.reader import looks_like_snapshot

    if looks_like_snapshot(path):  # a profile of its own kind: the trace readers do not read it
        raise ProfviewError(path, "a PyTorch memory snapshot, not a trace: profview FILE and summary FILE read it "
                                  "(profview.profiles.snapshot_profile.load_snapshot from Python)")
    raise ProfviewError(path, f"not a recognised profile (tried: {TRIED})")

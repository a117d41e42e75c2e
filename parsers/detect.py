"""Profiler text formats: detect by content and read into a Profile."""

from __future__ import annotations

from profview.errors import ProfviewError
from profview.parsers.kernel_counts import parse_kernel_counts
from profview.parsers.torch_table import parse_torch_tables
from profview.profile import Profile

TRIED = "Chrome-trace JSON, PyTorch key_averages table, kernel-count list"


def load_text_profile(path: str, data: bytes | bytearray, warnings: list[str]) -> Profile:
    """A Profile from a text table, or ProfviewError naming the formats tried."""
    text = bytes(data).decode("utf-8", "replace")
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
        return Profile(
            path=path,
            format="PyTorch key_averages table",
            tables=tables,
            missing=missing,
            metadata={"self_time_total_us": torch.footer, "tables": torch.tables},
            warnings=notes,
        )
    if counts is not None:
        return Profile(
            path=path,
            format="kernel-count list",
            tables={"kernels": counts},
            missing={
                "ops": "a kernel-count list has no operators",
                "steps": "a kernel-count list has no steps",
                "launches": "a kernel-count list has no launch links",
            },
            warnings=list(warnings),
        )
    raise ProfviewError(path, f"not a recognised profile (tried: {TRIED})")

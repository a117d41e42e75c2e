"""A cached ``export`` pays for what it writes, not for the rest of the command (issue 42).

Fresh interpreters on a real sample: the first export fills the cache, the second (the re-open,
measured against ``import polars``) must import none of the other commands' modules, and take the
kernel table with its categories as the cache keeps it (no category rule or Triton module
imported), while writing the same bytes as an export that reads the trace itself.  The witness
of those bytes' figures is the raw JSON: every kernel name and its launch count (``cat`` kernel,
``ph`` X), counted with the standard library.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

from support import sample
from witness import raw_kernels

SCRIPT = """
import sys
from profview.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    if exc.code:
        raise
loaded = sorted(m for m in sys.modules if m.startswith("profview."))
print("MODULES:", ",".join(loaded), file=sys.stderr)
"""

#: What a cached kernel export has no use for: the other commands, the rules that made its
#: categories (kept with the table), the viewer.
NOT_NEEDED = (
    "profview.cli.diff_command",
    "profview.cli.open_command",
    "profview.cli.query_command",
    "profview.cli.summary_command",
    "profview.analysis.efficiency.categories",
    "profview.analysis.efficiency.work.triton",
    "profview.tui",
)


def _export(trace: Path, out: Path, cache: Path, *extra: str) -> list[str]:
    env = {"PROFVIEW_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-c", SCRIPT, "export", str(trace), "-v", "kernels", "-o", str(out), "--force", *extra]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    line = next(line for line in run.stderr.splitlines() if line.startswith("MODULES:"))
    return line.removeprefix("MODULES: ").split(",")


def test_cached_kernel_export_imports_only_what_it_writes(tmp_path: Path) -> None:
    trace = sample("ddp_nccl_streams.pt.trace.json.gz")
    cache = tmp_path / "cache"
    _export(trace, tmp_path / "first.csv", cache)  # fills the cache: events, kernels, categorised kernels
    loaded = _export(trace, tmp_path / "cached.csv", cache)
    extra = [m for m in loaded if m.startswith(NOT_NEEDED)]
    assert extra == [], extra
    _export(trace, tmp_path / "cold.csv", cache, "--no-cache")
    cached = (tmp_path / "cached.csv").read_bytes()
    assert cached == (tmp_path / "cold.csv").read_bytes() == (tmp_path / "first.csv").read_bytes()
    with open(tmp_path / "cached.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    calls = {row["name"]: int(row["calls"]) for row in rows}
    assert {name: calls.get(name) for name in raw_kernels(trace)} == {n: c for n, (c, _) in raw_kernels(trace).items()}
    assert all(row["category"] for row in rows)  # each row has its category, read from the cache

"""A side of the gate: one trace, or several captures of the same run (a folder, a glob, or a
comma-separated list), each loaded as its own profile.  A job's folder of ranks is a side of
several captures too: its ranks are samples of the same step, and the spread between them is
part of the noise."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from ..errors import ProfviewError
from ..jobs.archives import ARCHIVE_NAME
from ..jobs.inputs import list_inputs, looks_like_trace
from ..profiles.trace_profile import Profile

#: The most captures one side may hold (each is a whole profile in memory).
MAX_CAPTURES = 16


def capture_paths(side: str) -> list[str]:
    """The trace files ``side`` names (see the module doc), in a stable order."""
    parts = [p for p in side.split(",") if p] if "," in side and not os.path.exists(side) else [side]
    files: list[str] = []
    for part in parts:
        if os.path.isfile(part) and not ARCHIVE_NAME.search(part):
            files.append(part)
            continue
        listing = list_inputs([part])
        if listing.archives:
            raise ProfviewError(part, "is an archive: extract it, then name the folder (the gate reads traces)")
        files.extend(p for p in listing.all_files() if looks_like_trace(p))
    if not files:
        raise ProfviewError(side, "no traces found")
    files = _distinct(files)
    if len(files) > MAX_CAPTURES:
        raise ProfviewError(side, f"{len(files)} captures: the gate reads at most {MAX_CAPTURES} a side")
    return files


def _distinct(files: list[str]) -> list[str]:
    """``files`` with each file once, however it is named (``a.json,./a.json``, a link to it): one
    file named twice is one capture, not two identical runs (which would count as no noise)."""
    seen: set[tuple[int, int] | str] = set()
    out = []
    for file in files:
        try:
            stat = os.stat(file)
            key: tuple[int, int] | str = (stat.st_dev, stat.st_ino)
        except OSError:  # said by the reader, as for any unreadable trace
            key = os.path.abspath(file)
        if key not in seen:
            seen.add(key)
            out.append(file)
    return out


def load_side(
    paths: list[str], *, use_cache: bool, comm_pattern: str | None, step_range: str | None = None
) -> list[Profile]:
    """Each capture loaded (two at a time: parsing releases the GIL); ``step_range``: ``--step-range``."""
    from ..profiles.loading import load

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(load, p, use_cache=use_cache, comm_pattern=comm_pattern, step_range=step_range) for p in paths
        ]
        return [f.result() for f in futures]

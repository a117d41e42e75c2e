"""What a file is from its first bytes: an SQLite database, or a raw Nsight Systems report."""

from __future__ import annotations

import os
import shlex
import shutil

from ...errors import ProfviewError
from ...sanitize import clean

#: The header every SQLite 3 database starts with.
SQLITE_MAGIC = b"SQLite format 3\x00"
#: The header of a ``.nsys-rep`` (and older ``.qdrep``) report, Nsight Systems' own container.
NSYS_REPORT_MAGIC = b"NVIDIA Tegra Profiler Report"


def head(path: str, size: int = 32) -> bytes:
    """The first ``size`` bytes of a regular file ``path``; empty for anything else (a pipe, a
    directory, a file that cannot be read: the other readers then say what is wrong)."""
    try:
        if not os.path.isfile(path):
            return b""
        with open(path, "rb") as file:
            return file.read(size)
    except OSError:
        return b""


def is_sqlite(path: str) -> bool:
    """Whether ``path`` is a regular file that starts with the SQLite header."""
    return head(path).startswith(SQLITE_MAGIC)


def is_nsys_report(path: str) -> bool:
    """Whether ``path`` is a raw Nsight Systems report (``.nsys-rep``)."""
    return head(path).startswith(NSYS_REPORT_MAGIC)


def conversion(path: str) -> str:
    """The ``nsys export`` command line that turns the report ``path`` into an SQLite export."""
    base = os.path.basename(path)
    stem = base[: -len(".nsys-rep")] if base.endswith(".nsys-rep") else "run"
    report = base if base.endswith(".nsys-rep") else "run.nsys-rep"
    return f"nsys export --type sqlite -o {shlex.quote(stem + '.sqlite')} {shlex.quote(report)}"


def report_refusal(path: str) -> ProfviewError:
    """The one line a raw report gets: what it is and the exact conversion (and, where ``nsys`` is
    on the PATH, that it can be run here; profview never runs it unasked)."""
    here = "; nsys is on your PATH, so this can be run here" if shutil.which("nsys") else ""
    return ProfviewError(
        path,
        "is a raw Nsight Systems report (.nsys-rep), a format only NVIDIA's nsys reads: convert it with "
        f"`{clean(conversion(path))}` and open the .sqlite{here}",
    )

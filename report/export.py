"""Write a view to CSV, Parquet or JSON, safely.

Writes go to a temporary file in the target folder and are renamed into place, so an existing
file is never truncated by a failed write; the input trace itself is never overwritten.  CSV
cells that a spreadsheet would run as formulas are prefixed with ``'`` unless ``raw_formulas``.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
from pathlib import Path

import polars as pl

from ..errors import ProfviewError
from ..sanitize import FORMULA_START, clean

#: CSV floats are written with the trace's resolution, 3 decimals of a µs (the nanosecond), not
#: binary noise such as 91166.83600000152 (issue 13).  Parquet and JSON keep the full values.
CSV_FLOAT_DECIMALS = 3
FORMATS = {".csv": "csv", ".parquet": "parquet", ".json": "json"}


def neutralise_formulas(frame: pl.DataFrame) -> pl.DataFrame:
    """Prefix text cells that start like a formula (``= + - @``) with a single quote."""
    pattern = "^(" + "|".join(re.escape(c) for c in FORMULA_START) + ")"
    return frame.with_columns(
        pl.when(pl.col(c).str.contains(pattern)).then("'" + pl.col(c)).otherwise(pl.col(c)).alias(c)
        for c, dtype in frame.schema.items()
        if dtype == pl.String
    )


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


def inert_text(frame: pl.DataFrame) -> pl.DataFrame:
    """Text cells with control characters, escape sequences and bidi overrides made visible."""
    return frame.with_columns(
        pl.col(c).map_elements(clean, return_dtype=pl.String, skip_nulls=True)
        for c, dtype in frame.schema.items()
        if dtype == pl.String
    )


def _mode_for(path: Path) -> int:
    """The permission bits of the file being replaced, or those the umask gives a new file."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def export_format(target: str) -> str:
    """The format implied by a target path (``-`` is CSV on stdout)."""
    if target == "-":
        return "csv"
    fmt = FORMATS.get(Path(target).suffix.lower())
    if fmt is None:
        raise ProfviewError(target, "unknown export format: use .csv, .parquet or .json, or - for stdout")
    return fmt


def write_table(
    frame: pl.DataFrame,
    target: str,
    *,
    inputs: tuple[str, ...] = (),
    overwrite: bool = True,
    raw_formulas: bool = False,
) -> str:
    """Write ``frame`` to ``target`` atomically; return the path written (or ``-``)."""
    fmt = export_format(target)
    if fmt == "csv" and not raw_formulas:
        frame = neutralise_formulas(frame)
    if target == "-" and _is_terminal(sys.stdout):
        frame = inert_text(frame)  # CSV straight onto a terminal: no escape sequence may run
    if target == "-":
        try:
            frame.write_csv(sys.stdout, float_precision=CSV_FLOAT_DECIMALS)
        except OSError as exc:
            if exc.errno != errno.EPIPE and "Broken pipe" not in str(exc):
                raise ProfviewError(target, f"cannot write ({exc.strerror or exc})") from None
            raise BrokenPipeError(errno.EPIPE, "Broken pipe") from None  # a closed pipe (| head): not an error
        return target
    path = Path(target).expanduser()
    if path.is_symlink():
        # A link is followed, never replaced by a file: with --force the file it points to is
        # written (made if the link dangles); without it, even a dangling link is left alone.
        if not overwrite:
            raise ProfviewError(target, "is a symbolic link (use --force to write the file it points to)")
        path = Path(os.path.realpath(path))
    for source in inputs:
        if path.exists() and os.path.samefile(path, source):
            raise ProfviewError(target, "refusing to overwrite the input profile")
    if path.is_dir():
        raise ProfviewError(target, "is a directory")
    if path.exists() and not overwrite:
        raise ProfviewError(target, "already exists (use --force to overwrite)")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ProfviewError(target, f"folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            if fmt == "csv":
                frame.write_csv(fh, float_precision=CSV_FLOAT_DECIMALS)
            elif fmt == "parquet":
                frame.write_parquet(fh)
            else:
                fh.write(frame.write_json().encode())
        # mkstemp makes the file 0600: give it the mode a plain open() would (or the old file's).
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ProfviewError(target, f"cannot write ({exc.strerror or exc})") from None
        raise
    return str(path)

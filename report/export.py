"""Write a view to CSV, Parquet or JSON, safely.

Writes go to an unnamed file in the target folder (Linux ``O_TMPFILE``; a hidden temporary file
elsewhere) that is named and renamed into place only once whole, so an existing file is never
truncated and no interruption leaves a partial file; no input (trace, table, a job's traces and
archives) is ever overwritten.  A FIFO or a device is written into, not replaced.  CSV
cells that a spreadsheet would run as formulas are prefixed with ``'`` unless ``raw_formulas``.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

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
    if target.endswith(("/", os.sep)) or os.path.isdir(target):  # before the suffix: /tmp has none
        what = "is a directory" if os.path.isdir(target) else "names a directory"
        raise ProfviewError(target, f"{what}: name a file, e.g. -o DIR/kernels.csv")
    fmt = FORMATS.get(Path(target).suffix.lower())
    if fmt is None:
        raise ProfviewError(target, "unknown export format: use .csv, .parquet or .json, or - for stdout")
    return fmt


def writable(frame: pl.DataFrame, fmt: str) -> pl.DataFrame:
    """``frame`` with the columns ``fmt`` cannot hold written as text (a query can answer with
    any type; each was an internal error): bytes as hex (CSV and JSON), and in CSV a duration as
    ISO 8601 (``P1DT0.000005S``) and a list, array or struct as its JSON (``[1,2]``); a null stays
    null.  Parquet holds them all as they are."""
    columns = []
    for name, dtype in frame.schema.items():
        column = pl.col(name)
        if fmt == "parquet":
            break
        if dtype == pl.Binary:
            columns.append(column.bin.encode("hex"))
        elif fmt == "csv" and isinstance(dtype, pl.Duration):
            columns.append(column.dt.to_string("iso"))
        elif fmt == "csv" and dtype.is_nested():
            as_json = pl.struct(column.alias("x")).struct.json_encode().str.slice(len('{"x":')).str.strip_suffix("}")
            columns.append(pl.when(column.is_not_null()).then(as_json).alias(name))
    return frame.with_columns(columns) if columns else frame


def write_table(
    frame: pl.DataFrame,
    target: str,
    *,
    inputs: tuple[str, ...] = (),
    overwrite: bool = True,
    raw_formulas: bool = False,
) -> str:
    """Write ``frame`` to ``target`` atomically; return the path written (or ``-``)."""
    # Categorical text (the events frame's repeated values) is written, and guarded, as text.
    frame = frame.with_columns(pl.col(pl.Categorical).cast(pl.String))
    fmt = export_format(target)
    frame = writable(frame, fmt)
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
    path = check_target(target, inputs=inputs, overwrite=overwrite)
    if path.exists() and not path.is_file():  # a FIFO or a device: streamed into, never replaced
        return _write_into(frame, fmt, path, target)
    return _write_atomically(path, target, lambda fh: _write_frame(frame, fmt, fh))


def write_text(text: str, target: str, *, inputs: tuple[str, ...] = (), overwrite: bool = True) -> str:
    """Write ``text`` (a report: the gate's JSON, Markdown, JUnit) to ``target`` atomically, as
    :func:`write_table` writes a table, never over an input; return the path written."""
    path = check_target(target, inputs=inputs, overwrite=overwrite)
    data = text.encode()
    if path.exists() and not path.is_file():  # a FIFO or a device
        try:
            with open(path, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise ProfviewError(target, f"cannot write ({exc.strerror or exc})") from None
        return str(path)
    return _write_atomically(path, target, lambda fh: fh.write(data))


def _write_atomically(path: Path, target: str, write: Callable[[BinaryIO], object]) -> str:
    """``write`` into an unnamed file beside ``path``, renamed over it once whole (module doc)."""
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = _unnamed_file(folder, path.name)
    try:
        with os.fdopen(fd, "wb", closefd=False) as fh:
            write(fh)
        # mkstemp makes the file 0600: give it the mode a plain open() would (or the old file's).
        os.fchmod(fd, _mode_for(path))
        if tmp is None:  # an unnamed file: it gets a name only now that it is whole
            tmp = _link_unnamed(fd, folder, path.name)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ProfviewError(target, f"cannot write ({exc.strerror or exc})") from None
        raise
    finally:
        os.close(fd)
    return str(path)


def check_target(target: str, *, inputs: tuple[str, ...] = (), overwrite: bool = True) -> Path:
    """The path ``target`` will be written to, or a one-line error (before any work is done).

    Refuses every input (``inputs``, and every file this process read or will read, as noted in
    :mod:`profview.reads`: traces, a job's traces and archives, captures, gate files; hard links
    and symlinks to one included), a directory, a missing folder, and an existing file without
    ``overwrite``.
    """
    from ..reads import noted

    given = len(inputs)
    inputs = (*inputs, *noted())
    path = Path(target).expanduser()
    if path.is_symlink():
        # A link is followed, never replaced by a file: with --force the file it points to is
        # written (made if the link dangles); without it, even a dangling link is left alone.
        if not overwrite:
            raise ProfviewError(target, "is a symbolic link (use --force to write the file it points to)")
        path = Path(os.path.realpath(path))
    if path.exists():
        for index, source in enumerate(inputs):
            try:
                same = os.path.samefile(path, source)
            except OSError:
                same = False
            if same:
                what = "the input profile" if index < given else f"an input of this command ({clean(source)})"
                raise ProfviewError(target, f"refusing to overwrite {what}")
    if path.is_dir():
        raise ProfviewError(target, "is a directory")
    if path.exists() and path.is_file() and not overwrite:
        raise ProfviewError(target, "already exists (use --force to overwrite)")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ProfviewError(target, f"folder {folder} does not exist")
    return path


def _write_frame(frame: pl.DataFrame, fmt: str, fh: BinaryIO) -> None:
    if fmt == "csv":
        frame.write_csv(fh, float_precision=CSV_FLOAT_DECIMALS)
    elif fmt == "parquet":
        frame.write_parquet(fh)
    else:
        fh.write(frame.write_json().encode())


def _write_into(frame: pl.DataFrame, fmt: str, path: Path, target: str) -> str:
    """Stream into a FIFO or a device (``-o /dev/null``): there is no file to replace."""
    try:
        with open(path, "wb") as fh:
            _write_frame(frame, fmt, fh)
    except OSError as exc:
        raise ProfviewError(target, f"cannot write ({exc.strerror or exc})") from None
    return str(path)


def _unnamed_file(folder: Path, name: str) -> tuple[int, str | None]:
    """A file to write the export into: unnamed where the system allows (Linux ``O_TMPFILE``), so
    that no interruption, not even SIGKILL, can leave part of it behind; else a hidden temporary."""
    flag = getattr(os, "O_TMPFILE", 0)
    if flag and os.path.isdir("/proc/self/fd"):
        try:
            return os.open(folder, flag | os.O_RDWR, 0o600), None
        except OSError:  # a file system without it (some network file systems)
            pass
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    return fd, tmp


def _link_unnamed(fd: int, folder: Path, name: str) -> str:
    """Give the finished unnamed file a hidden name beside the target (renamed over it next).

    ``linkat(AT_SYMLINK_FOLLOW)`` on its ``/proc/self/fd`` entry (``os.link`` calls plain
    ``link``, which does not follow that link); where that is refused, a copy.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for _attempt in range(100):
        tmp = str(folder / f".{name}.{os.urandom(4).hex()}.tmp")
        if libc.linkat(_AT_FDCWD, f"/proc/self/fd/{fd}".encode(), _AT_FDCWD, os.fsencode(tmp), _AT_SYMLINK_FOLLOW) == 0:
            return tmp
        if ctypes.get_errno() != errno.EEXIST:
            break
    copy, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        while chunk := os.read(fd, 1 << 20):
            os.write(copy, chunk)
        os.fchmod(copy, os.fstat(fd).st_mode & 0o7777)
    except BaseException:
        os.unlink(tmp)
        raise
    finally:
        os.close(copy)
    return tmp


_AT_FDCWD = -100
_AT_SYMLINK_FOLLOW = 0x400

"""Read an input file's bytes: plain or gzip, whole or truncated.

A plain file of at least :data:`MAP_BYTES` is memory-mapped (private, copy-on-write) instead of
copied: the parser reads the page cache directly, and pages it is done with can be dropped.
A gzip stream that ends early (a killed job, a half-copied file) is decompressed as far as it
goes and reported through ``warnings``; a file that cannot be read raises :class:`ProfviewError`.
"""

from __future__ import annotations

import mmap
import os
import stat
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO

from ..errors import ProfviewError

GZIP_MAGIC = b"\x1f\x8b"
SALVAGE_PIECE = 64 * 1024
#: Peak memory of a load, and of the viewer's model, is at most about this many times the
#: decompressed JSON with the compiled scanner (measured 1.5-2.5x from 172 MB to 1 GB), plus the
#: interpreter and libraries; the general reader alone (no C compiler at install) needs up to 3.4x.
MEMORY_FACTOR = 2.6
MEMORY_FACTOR_GENERAL_READER = 3.5
#: Plain files from this size on are memory-mapped rather than read into memory.
MAP_BYTES = 32 * 2**20
BASE_MEMORY = 200 * 2**20
#: Deflate's largest possible expansion (a long run of one byte): 1032 to 1.
DEFLATE_MAX_RATIO = 1032


@dataclass
class SourceBytes:
    """The decompressed content of one input file."""

    path: str
    data: bytearray | mmap.mmap  # an mmap for large plain files (see MAP_BYTES)
    compressed: bool
    warnings: list[str] = field(default_factory=list)

    def release(self) -> bytearray | mmap.mmap:
        """The content, handed over: this object keeps none of it, so it can be freed early."""
        data, self.data = self.data, bytearray()
        return data


def _gunzip_fast(raw: bytes | bytearray, path: str) -> bytearray:
    """Decompress a complete gzip stream straight into one buffer (no intermediate copies)."""
    import io

    try:
        from isal.igzip import IGzipFile as GzipFile  # ISA-L: about 3x faster than zlib
    except ImportError:  # pragma: no cover - isal is a declared dependency
        from gzip import GzipFile  # type: ignore[assignment]

    # The gzip trailer holds the decompressed size modulo 2**32: a good first guess, unless the
    # file is cut or forged (then the last 4 bytes are anything: never trust them past what
    # deflate can expand to).
    guess = min(max(int.from_bytes(raw[-4:], "little"), 1 << 20), _max_expansion(raw))
    if not _fits(guess):
        guess = len(raw) * 4  # a forged or cut trailer must not refuse a small file: grow instead
    out = bytearray(guess)
    filled = 0
    with GzipFile(fileobj=io.BytesIO(raw)) as stream:
        while True:
            if filled == len(out):  # the guess was short (or exact): grow only if data remains
                more = stream.read(8 << 20)
                if not more:
                    break
                check_memory(path, _needed(len(out) * 2, raw))  # a gzip bomb fails here, early
                out += more
                filled += len(more)
                out.extend(bytes(len(out)))
                continue
            with memoryview(out) as view:  # bounded reads: the stream buffers what it returns
                count = stream.readinto(view[filled : filled + (8 << 20)])
            if not count:
                break
            filled += count
    del out[filled:]
    return out


def _max_expansion(raw: bytes | bytearray) -> int:
    """An upper bound of what ``raw`` can decompress to (deflate expands at most ~1032x)."""
    return max(len(raw) * DEFLATE_MAX_RATIO, 1 << 20)


def _needed(decompressed: int, raw: bytes | bytearray) -> int:
    return int(decompressed * memory_factor()) + len(raw) + BASE_MEMORY


def _fits(decompressed: int) -> bool:
    available = available_memory()
    return available is None or _needed(decompressed, b"") <= available


def _gunzip_partial(raw: bytes | bytearray, path: str) -> tuple[bytearray, str | None]:
    """Decompress as much of a damaged gzip stream as possible; return (data, problem).

    The stream is fed in small pieces so that everything before a corrupt block (or a cut)
    is kept.
    """
    out = bytearray()
    rest = bytes(raw)
    problem: str | None = None
    while rest[:2] == GZIP_MAGIC:
        dec = zlib.decompressobj(wbits=31)
        offset = 0
        try:
            while offset < len(rest) and not dec.eof:
                out += dec.decompress(rest[offset : offset + SALVAGE_PIECE])
                if len(out) > 2 * len(raw) * 8 + (64 << 20):  # check now and then, not per piece
                    check_memory(path, _needed(len(out), raw))
                offset += SALVAGE_PIECE
        except zlib.error as exc:
            problem = f"corrupt gzip data after {len(out):,} bytes ({exc})"
            break
        if not dec.eof:
            problem = "the gzip stream ends early (truncated file)"
            break
        rest = dec.unused_data
    return out, problem


def check_memory(path: str, needed: int) -> None:
    """Fail early, with a clear message, when a trace needs more memory than is available."""
    available = available_memory()
    if available is not None and needed > available:
        raise ProfviewError(
            path,
            f"needs about {needed / 2**30:.1f} GiB of memory to load, but only {available / 2**30:.1f} GiB "
            "is available (free memory, or open the trace on a larger machine)",
        )


def memory_factor() -> float:
    """Memory needed per byte of JSON: less where the compiled scanner is there to read it."""
    from .fast_chrome import available

    return MEMORY_FACTOR if available() else MEMORY_FACTOR_GENERAL_READER


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo in bytes (``$PROFVIEW_MEMORY_LIMIT`` overrides), or None."""
    override = os.environ.get("PROFVIEW_MEMORY_LIMIT")
    if override:
        return int(override)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _read_stream(fh: BinaryIO, name: str) -> bytearray:
    """All of a pipe, checking memory as it grows."""
    raw = bytearray()
    while piece := fh.read(8 << 20):
        raw += piece
        if len(raw) % (256 << 20) < len(piece):
            check_memory(name, _needed(len(raw), b""))
    return raw


def read_source(path: str | os.PathLike[str]) -> SourceBytes:
    """Read ``path`` and return its decompressed bytes, or raise a one-line ProfviewError."""
    name = os.fspath(path)
    if not os.path.exists(name):
        raise ProfviewError(name, "no such file")
    if os.path.isdir(name):
        raise ProfviewError(name, "is a directory, not a trace file")
    try:
        mode = os.stat(name).st_mode
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
            raise ProfviewError(name, "is a device or socket, not a trace file")
        with open(name, "rb") as fh:
            if stat.S_ISFIFO(mode) or os.fstat(fh.fileno()).st_size == 0:
                # A pipe (<(zcat trace.json.gz)), or a file whose size the system does not know
                # (/proc): read to its end.
                raw = _read_stream(fh, name)
            else:
                size = os.fstat(fh.fileno()).st_size
                if size >= MAP_BYTES and fh.read(2) != GZIP_MAGIC:
                    check_memory(name, int(size * memory_factor()) + BASE_MEMORY)
                    return SourceBytes(name, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY), compressed=False)
                fh.seek(0)
                check_memory(name, size + BASE_MEMORY)
                raw = bytearray(size)
                with memoryview(raw) as view:
                    count = fh.readinto(view)
                del raw[count:]
    except PermissionError:
        raise ProfviewError(name, "permission denied") from None
    except OSError as exc:
        raise ProfviewError(name, f"cannot read ({exc.strerror or exc})") from None
    if not raw:
        raise ProfviewError(name, "the file is empty")
    if raw[:2] != GZIP_MAGIC:
        check_memory(name, int(len(raw) * memory_factor()) + BASE_MEMORY)
        return SourceBytes(name, raw, compressed=False)
    # The trailer (decompressed size modulo 4 GiB) may be forged or, in a cut file, anything:
    # the check here assumes a typical 4x, and the real size is checked as it decompresses.
    check_memory(name, _needed(len(raw) * 4, raw))
    try:
        data = _gunzip_fast(raw, name)
        warnings: list[str] = []
    except ProfviewError:
        raise
    except Exception:
        data, problem = _gunzip_partial(raw, name)
        if not data:
            raise ProfviewError(name, problem or "not a readable gzip file") from None
        warnings = [f"{problem}; read {len(data):,} decompressed bytes"]
    check_memory(name, _needed(len(data), b""))
    return SourceBytes(name, data, compressed=True, warnings=warnings)

"""Load a memory snapshot's pickle so that nothing in it is ever imported or called.

A snapshot holds only dicts, lists, tuples, strings and numbers.  :class:`SnapshotUnpickler` is
the C unpickler with ``find_class`` and ``persistent_load`` refusing: every opcode that could
reach code (GLOBAL, STACK_GLOBAL, INST, OBJ, the EXT codes, which all resolve a name through
``find_class``; PERSID and BINPERSID, through ``persistent_load``) fails before it names anything,
so REDUCE, BUILD, NEWOBJ and NEWOBJ_EX never get a callable to call.  A refused file is said in one
line: the file and the first opcode of that class (found by walking the opcodes, on the error path
only).  Plain or gzipped; the gzip stream is decompressed as the unpickler reads it (no copy of the
whole), with its memory checked as it grows, so a gzip bomb is refused early.
"""

from __future__ import annotations

import os
import pickle
import pickletools
import zlib
from typing import Any, BinaryIO

from ...errors import ProfviewError
from ..source import BASE_MEMORY, GZIP_MAGIC, check_memory

#: The pickle opcodes that reach code, each with the class of thing it asks for.
DANGEROUS_OPCODES: dict[str, str] = {
    "GLOBAL": "a global (a class or function by name)",
    "STACK_GLOBAL": "a global (a class or function by name)",
    "INST": "a class instance (INST names a class)",
    "OBJ": "a class instance (OBJ calls a class)",
    "REDUCE": "a reduce (a call)",
    "BUILD": "a build (__setstate__, a call)",
    "NEWOBJ": "a new object (cls.__new__, a call)",
    "NEWOBJ_EX": "a new object (cls.__new__, a call)",
    "EXT1": "an extension-registry global",
    "EXT2": "an extension-registry global",
    "EXT4": "an extension-registry global",
    "PERSID": "a persistent id",
    "BINPERSID": "a persistent id",
}
#: Pickle protocols a snapshot may be written in (torch writes the interpreter's default: 4 up
#: to Python 3.13, 5 from 3.14).
PROTOCOLS = (2, 3, 4, 5)
#: Memory the loaded objects need per byte of pickle (measured: 4.6-6.1x on the shared
#: snapshots, whose frames repeat; benchmarks/snapshot_read.py).
OBJECT_MEMORY_FACTOR = 7
#: Decompressed bytes between two memory checks of a gzip stream.
CHECK_EVERY = 64 * 2**20
#: Bytes of the opcode walk that names a refused opcode, at most (the error path only).
WALK_LIMIT = 256 * 2**20


class Refused(Exception):
    """A global or a persistent id the unpickler would not resolve."""


class SnapshotUnpickler(pickle.Unpickler):
    """The C unpickler with every global and persistent id refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise Refused("global")

    def persistent_load(self, pid: Any) -> Any:
        raise Refused("persistent id")


def pickle_protocol(head: bytes) -> int | None:
    """The protocol of a pickle whose first bytes are ``head`` (its PROTO opcode), or None."""
    if len(head) >= 2 and head[0] == 0x80 and head[1] in PROTOCOLS:
        return head[1]
    return None


def read_head(path: str, size: int = 2) -> bytes:
    """The first ``size`` decompressed bytes of ``path`` (a gzip file's content, not its header);
    empty if it cannot be read (the reader that follows says why)."""
    try:
        with open(path, "rb") as fh:
            first = fh.read(max(size, 64))
            if not first.startswith(GZIP_MAGIC):
                return first[:size]
            fh.seek(0)
            inflate = zlib.decompressobj(wbits=31)
            out = b""
            while len(out) < size:
                chunk = fh.read(4096)
                if not chunk:
                    break
                out += inflate.decompress(chunk, size - len(out))
            return out[:size]
    except (OSError, zlib.error):
        return b""


class _CheckedGzip:
    """A gzip file read by the unpickler, its decompressed size checked against the memory left
    every :data:`CHECK_EVERY` bytes (the objects built from it need :data:`OBJECT_MEMORY_FACTOR`
    times as much)."""

    def __init__(self, path: str, fh: BinaryIO) -> None:
        import gzip

        self.path = path
        self.stream = gzip.GzipFile(fileobj=fh)
        self.consumed = 0
        self.next_check = CHECK_EVERY

    def _count(self, count: int) -> None:
        self.consumed += count
        if self.consumed >= self.next_check:
            self.next_check += CHECK_EVERY
            check_memory(self.path, self.consumed * OBJECT_MEMORY_FACTOR + BASE_MEMORY)

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self._count(len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        count = self.stream.readinto(buffer)
        self._count(count)
        return count

    def readline(self, size: int = -1) -> bytes:
        data = self.stream.readline(size)
        self._count(len(data))
        return data


def load_snapshot_pickle(path: str | os.PathLike[str]) -> Any:
    """The object a snapshot's pickle holds, loaded with :class:`SnapshotUnpickler`; any refusal or
    damage is a one-line :class:`ProfviewError` naming the file and the opcode."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            gzipped = fh.read(2) == GZIP_MAGIC
            fh.seek(0)
            size = os.fstat(fh.fileno()).st_size
            check_memory(name, size * (OBJECT_MEMORY_FACTOR if not gzipped else 2) + BASE_MEMORY)
            source: Any = _CheckedGzip(name, fh) if gzipped else fh
            try:
                return SnapshotUnpickler(source).load()
            except ProfviewError:
                raise
            except Refused as exc:
                raise ProfviewError(name, _refusal(name, gzipped, str(exc))) from None
            except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, KeyError,
                    IndexError, OverflowError, RecursionError, UnicodeDecodeError, zlib.error, OSError) as exc:
                raise ProfviewError(name, _damage(name, gzipped, exc)) from None
            except MemoryError:
                raise ProfviewError(name, "ran out of memory unpickling the snapshot", out_of_memory=True) from None
    except PermissionError:
        raise ProfviewError(name, "permission denied") from None
    except FileNotFoundError:
        raise ProfviewError(name, "no such file") from None
    except IsADirectoryError:
        raise ProfviewError(name, "is a directory, not a memory snapshot") from None


def _first_dangerous(name: str, gzipped: bool) -> tuple[str, int] | None:
    """The first opcode of :data:`DANGEROUS_OPCODES` in the pickle and its byte offset, walking at
    most :data:`WALK_LIMIT` bytes; None if none is found there (or the walk cannot go on)."""
    import gzip

    try:
        with (gzip.open(name, "rb") if gzipped else open(name, "rb")) as fh:
            data = fh.read(WALK_LIMIT)
        for opcode, _arg, at in pickletools.genops(data):
            if opcode.name in DANGEROUS_OPCODES:
                return opcode.name, at if at is not None else -1
    except (ValueError, EOFError, OSError, zlib.error, UnicodeDecodeError, KeyError, IndexError):
        return None
    return None


def _refusal(name: str, gzipped: bool, what: str) -> str:
    """The line for a refused pickle: the opcode and its class, or what the unpickler refused."""
    found = _first_dangerous(name, gzipped)
    if found is not None:
        opcode, at = found
        return (
            f"refused: pickle opcode {opcode} at byte {at:,} asks for {DANGEROUS_OPCODES[opcode]}; a memory "
            "snapshot holds only dicts, lists, tuples, strings and numbers, and nothing a file names is imported "
            "or called"
        )
    return f"refused: the pickle asks for {what}; a memory snapshot holds only plain data"


def _damage(name: str, gzipped: bool, exc: BaseException) -> str:
    """The line for a pickle that is damaged, or that uses an opcode of code without a global."""
    found = _first_dangerous(name, gzipped)
    if found is not None:
        opcode, at = found
        return (
            f"refused: pickle opcode {opcode} at byte {at:,} asks for {DANGEROUS_OPCODES[opcode]}; a memory "
            "snapshot holds only plain data"
        )
    detail = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    return f"not a readable memory snapshot pickle ({type(exc).__name__}: {detail})"

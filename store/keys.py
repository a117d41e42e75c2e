"""Where a trace's cache entry lives: its key from the trace's identity (no Polars needed).

Split from :mod:`profview.store.trace_cache` so that the CLI can ask "is this trace cached?" before it
imports Polars (see :mod:`profview.profiles.prefetch`).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from .. import __version__

#: Bump when the events frame or a saved view changes, to ignore entries written by older code
#: (4: the overview's rank and communication figures, steps counting CPU collectives;
#: 5: collective-argument columns in the events frame, per-rank job summaries;
#: 6: the ``overhead`` kind, operator rows as torch's key_averages, the steps' pre-window column;
#: 7: both of the above together; 8: and the memory columns of ``[memory]`` events;
#: 9: the modules view's forward/backward split and optimizer rows; 10: the stored linked model;
#: 11: the ``concrete_inputs`` and ``flops`` columns the perf model reads; 12: host events of equal
#: start and duration keep their file order in the call tree, so stored views from 11 may differ;
#: 13: the events frame's repeated text columns (and the stored model's) are Categorical;
#: 14: the graph-replay and Triton argument columns (issue 36), views of issues 31-36);
#: 15: the efficiency views hold replayed calls sized through their capture, kept per set of captures.
#: 16: kept critical paths stay in their step and call a queued replay's wait the GPU's;
#: 17: ops with a row per graph launched before the window, modules counting replayed calls, step
#: efficiency without an MFU where unsized rows hold more time, critical_path_names' (between events).
#: 18: the events frame's ``short_name`` column, and the kernel view's where a trace records one.
CACHE_FORMAT = 18
META_FILE = "meta.json"
#: The code whose output the cache holds: the readers, the frames, the analysis, the views and
#: jobs built from them, and the store's own formats (every ``.py`` below these, and the compiled
#: modules).  An entry's key holds a digest of it, so an entry written by other code (a fix that
#: forgot to bump :data:`CACHE_FORMAT`, an edited checkout) is never read.
CODE_FOLDERS = ("parsers", "analysis", "profiles", "jobs", "store")
CODE_FILES = ("frames.py", "sanitize.py")
PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def code_files(root: Path = PACKAGE_ROOT) -> list[Path]:
    """The files :func:`code_digest` covers, in a stable order."""
    found = [root / name for name in CODE_FILES]
    for folder in CODE_FOLDERS:
        found += sorted((root / folder).rglob("*.py"))
    found += sorted(root.glob("_*.so")) + sorted(root.glob("_*.pyd"))
    return [path for path in found if path.is_file()]


@functools.cache
def code_digest(root: Path = PACKAGE_ROOT) -> str:
    """A digest of the source (and compiled modules) that compute what the cache holds: each
    file's name relative to the package and its bytes.  Hashing them (about 1.3 MB) is done once
    per version of the files: the digest is kept beside the cache entries under a name made of
    the files' names, sizes, modification times and inodes (a stat each), and read from there
    (16 bytes per version of the code)."""
    files = code_files(root)
    signature = hashlib.sha256()
    for path in files:
        info = path.stat()
        signature.update(f"{path.relative_to(root)}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ino}\0".encode())
    memo = cache_root() / f"code-{signature.hexdigest()[:32]}.digest"  # a file: no entry's name
    try:
        known = memo.read_text()
        if len(known) == 32:
            return known
    except OSError:
        pass
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    value = digest.hexdigest()[:32]
    try:
        make_folder(memo.parent)
        staged = memo.with_name(f".{memo.name}.{os.getpid()}.tmp")
        staged.write_text(value)
        os.replace(staged, memo)
    except OSError:
        pass  # not kept: computed again next time
    return value


def cache_root() -> Path:
    """The folder holding cache entries."""
    override = os.environ.get("PROFVIEW_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("profview")) / "traces"


def make_folder(path: Path) -> None:
    """Make ``path`` and the folders above it, except the user's home folder: where ``HOME`` names
    a folder that does not exist (a service account's ``/nonexistent``), nothing is cached rather
    than a home made (OSError, which every writer of the cache takes as "not cached")."""
    home = os.path.expanduser("~")
    below_home = str(path).startswith(home.rstrip("/") + "/")
    if below_home and not os.environ.get("PROFVIEW_CACHE_DIR") and not os.path.isdir(home):
        raise FileNotFoundError(errno.ENOENT, "the home folder does not exist: nothing is cached", home)
    path.mkdir(parents=True, exist_ok=True)


def exact_path(path: str) -> str:
    """A file name as text that names exactly its bytes: itself when it is valid UTF-8, else its
    bytes in hex after a NUL (which no file name holds, so no two names meet)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes, held as surrogate escapes
        return "\0bytes:" + os.fsencode(path).hex()
    return path


def identity(path: str) -> dict[str, Any]:
    """What makes a trace version unique (raises OSError if it cannot be looked at)."""
    stat = os.stat(path)
    return {
        "path": exact_path(os.path.abspath(path)),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        # What no copy tool or `touch -r` restores: a trace rewritten in place with its size and
        # modification time kept still gets a new change time (and a copied one a new inode).
        "ctime_ns": stat.st_ctime_ns,
        "inode": stat.st_ino,
        "version": __version__,
        "format": CACHE_FORMAT,
        "code": code_digest(),
    }


def file_stat(path: str) -> list[Any]:
    """:func:`identity`'s per-file part as a list (name, size, modification and change times,
    inode): what a key over many files (a job's) holds per file, the code's identity once beside
    (:func:`code_identity`).  Raises OSError if the file cannot be looked at."""
    stat = os.stat(path)
    return [exact_path(os.path.abspath(path)), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]


def code_identity() -> dict[str, Any]:
    """:func:`identity`'s part that is the same for every file: profview's version, the cache's
    format and the code's digest."""
    return {"version": __version__, "format": CACHE_FORMAT, "code": code_digest()}


def key(fields: dict[str, Any]) -> str:
    """A short stable hash of ``fields`` (an identity, or analysis settings)."""
    return hashlib.sha256(orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


def entry_path(path: str) -> Path:
    """The folder an entry for ``path`` has (whether or not it exists); raises OSError."""
    return cache_root() / key(identity(path))


def has_entry(path: str) -> bool:
    """Whether ``path`` has a cache entry (a quick look: :func:`profview.store.trace_cache.lookup` validates it)."""
    try:
        return (entry_path(path) / META_FILE).is_file()
    except OSError:
        return False

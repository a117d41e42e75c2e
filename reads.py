"""Every file this process reads, so that no write goes over one.

Each reader of an input (a trace or table, a capture trace or folder, ``execution_details.json``,
a gate file) notes the file here as it opens it, and each command notes the files it will read
before any work; :func:`profview.report.export.check_target`, the one check every writer calls,
refuses a target that is the same file (a hard link or a symlink to it included) as any of them.
"""

from __future__ import annotations

import os
import threading

_NOTED: dict[str, None] = {}
_LOCK = threading.Lock()


def note(*paths: str | os.PathLike[str] | None) -> None:
    """Remember ``paths`` (a folder: it and every file in it) as inputs of this process."""
    with _LOCK:
        for path in paths:
            if path is None:
                continue
            name = os.fspath(path)
            _NOTED[name] = None
            if os.path.isdir(name):
                try:
                    entries = sorted(os.listdir(name))
                except OSError:
                    continue
                for entry in entries:
                    _NOTED[os.path.join(name, entry)] = None


def noted() -> tuple[str, ...]:
    """Every input noted so far, in the order first noted."""
    with _LOCK:
        return tuple(_NOTED)


def forget() -> None:
    """Forget every noted input (a process that runs several commands, such as the tests)."""
    with _LOCK:
        _NOTED.clear()

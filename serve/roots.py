"""The folders a server may read: every path a tool is given is resolved (symbolic links
followed) and must lie inside one of them, or the call is refused in one line."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import ProfviewError

#: Characters that would make a path a pattern: a tool takes files and folders, never globs.
GLOB_CHARACTERS = frozenset("*?[")


@dataclass(frozen=True)
class Roots:
    """The resolved root folders (the first one is where relative paths start)."""

    folders: tuple[str, ...]

    @classmethod
    def of(cls, folders: list[str] | None) -> Roots:
        """The roots given (default: the current folder), each resolved; each must be a folder."""
        resolved = []
        for folder in folders or [os.getcwd()]:
            real = os.path.realpath(os.path.expanduser(folder))
            if not os.path.isdir(real):
                raise ProfviewError(folder, "--root: not a folder")
            resolved.append(real)
        return cls(tuple(dict.fromkeys(resolved)))

    def resolve(self, path: str) -> str:
        """``path`` (relative paths from the first root) resolved, if it lies inside a root; else a
        one-line refusal that names the roots.  The file need not exist (the reader says so)."""
        if not isinstance(path, str) or not path.strip():
            raise ProfviewError(None, "a path is needed (a trace, table file, job folder or archive)")
        if "\x00" in path:
            raise ProfviewError(None, "a path cannot hold a NUL character")
        if GLOB_CHARACTERS & set(path):
            raise ProfviewError(path, "a glob is not taken here: name the job's folder or archive")
        joined = path if os.path.isabs(path) else os.path.join(self.folders[0], path)
        real = os.path.realpath(joined)
        if not any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in self.folders):
            raise ProfviewError(path, f"outside the folders this server reads ({', '.join(self.folders)})")
        return real

    def resolve_side(self, side: str) -> str:
        """A gate side: one path, or a comma list of captures, each resolved and confined."""
        return ",".join(self.resolve(part.strip()) for part in side.split(",") if part.strip())

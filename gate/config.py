"""A gate file (``--gate FILE.toml``), the rules kept under version control::

    fdr = 0.05          # false-discovery rate across every test (Benjamini–Hochberg)
    min_share = 0.5     # % of the view's time under which a kernel or operator is not tested
    rules = ["kernels.total_us > +5%", "steps.duration_us > +3%"]

    [[accept]]          # a known regression, passing until its date
    rule = "kernels.total_us > +5%"
    reason = "new attention kernel, tracked in #123"
    until = "2026-12-31"

Unknown keys are refused (a misspelt ``min_shares`` would silently gate nothing)."""

from __future__ import annotations

import math
from typing import Any

from ..errors import ProfviewError
from ..reads import note
from ..sanitize import clean
from .run import Accepted, parse_date

KEYS = frozenset({"rules", "fdr", "min_share", "seed", "strict", "accept", "inconclusive"})


#: The largest gate file read (a gate file is a few rules; a device or a runaway file is not one).
MAX_GATE_BYTES = 1 << 20


def _gate_text(path: str) -> str:
    """The text of a gate file: a regular file of at most :data:`MAX_GATE_BYTES`, opened without
    waiting (a FIFO with no writer, ``/dev/zero`` and a folder are refused at once, by what they are)."""
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ProfviewError(path, f"cannot read ({exc.strerror or exc})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "a named pipe" if stat.S_ISFIFO(mode) else ("a folder" if stat.S_ISDIR(mode) else "a device")
        raise ProfviewError(path, f"is {what}, not a gate file (a TOML file)")
    with os.fdopen(fd, "rb") as fh:
        try:
            data = fh.read(MAX_GATE_BYTES + 1)
        except OSError as exc:
            raise ProfviewError(path, f"cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_GATE_BYTES:
        raise ProfviewError(path, f"larger than {MAX_GATE_BYTES // 2**20} MiB: not a gate file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProfviewError(path, f"not a valid TOML gate file (not UTF-8: {exc.reason} at byte {exc.start})") from None


def _parse(path: str, tomllib: Any) -> dict[str, Any]:
    text = _gate_text(path)
    try:
        return dict(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise ProfviewError(path, f"not a valid TOML gate file ({exc})") from None
    except RecursionError:
        raise ProfviewError(path, "not a gate file: TOML nested deeper than profview reads") from None


#: The keys of an ``[[accept]]`` table.
ACCEPT_KEYS = frozenset({"rule", "reason", "until"})


def _toml_type(value: object) -> str:
    """The TOML name of a value's type (``string``, ``integer``, ``array`` …)."""
    names = {bool: "boolean", int: "integer", float: "float", str: "string", list: "array", dict: "table"}
    return names.get(type(value), type(value).__name__)


def _a(kind: str) -> str:
    """``a string``, ``an integer``."""
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def _short_repr(value: object, width: int = 60) -> str:
    """``value`` as Python writes it, cut to ``width`` characters and cleaned for one line."""
    text = clean(repr(value))
    return text if len(text) <= width else text[: width - 1] + "…"


def read_gate_file(path: str) -> dict[str, Any]:
    """The settings of a gate file (see the module doc), checked; one-line errors naming the file."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            raise ProfviewError(path, "reading a gate file needs Python 3.11 or the tomli package") from None
    note(path)  # version-controlled: never a write's target (profview.reads)
    data = _parse(path, tomllib)
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise ProfviewError(path, f"unknown key {unknown[0]!r} (keys: {', '.join(sorted(KEYS))})")
    rules = data.get("rules", [])
    if not isinstance(rules, list):
        given = _a(_toml_type(rules))
        raise ProfviewError(path, f"rules must be a list of strings, not {given} ({_short_repr(rules)})")
    for at, rule in enumerate(rules):
        if not isinstance(rule, str):
            raise ProfviewError(path, f"rules[{at}] is {_a(_toml_type(rule))} ({_short_repr(rule)}), not a string")
    settings: dict[str, Any] = {"rules": rules}
    for key, kind in (("fdr", (int, float)), ("min_share", (int, float)), ("seed", int), ("strict", bool)):
        if key in data:
            if not isinstance(data[key], kind) or isinstance(data[key], bool) is not (kind is bool):
                raise ProfviewError(
                    path, f"{key} has the wrong type ({_toml_type(data[key])}: {_short_repr(data[key])})"
                )
            if key != "strict" and (data[key] < 0 or not math.isfinite(data[key])):
                raise ProfviewError(path, f"{key} must be a finite number of 0 or more, not {data[key]}")
            if key == "fdr" and not 0 < data[key] < 1:  # said here, by its key, not as the option --fdr
                raise ProfviewError(path, f"fdr must be between 0 and 1, not {data[key]}")
            if key == "min_share" and not data[key] < 100:
                raise ProfviewError(path, f"min_share must be 0 or more and under 100 (a %), not {data[key]}")
            settings[key] = data[key]
    if "inconclusive" in data:
        if data["inconclusive"] not in ("pass", "fail"):
            given = _short_repr(data["inconclusive"])
            raise ProfviewError(path, f'inconclusive must be "pass" or "fail", not {given}')
        settings["inconclusive"] = data["inconclusive"]
    accepted = []
    entries = data.get("accept", [])
    if not isinstance(entries, list):
        raise ProfviewError(path, f"accept must be [[accept]] tables, not {_a(_toml_type(entries))}")
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise ProfviewError(path, f"[[accept]] {number} is {_a(_toml_type(entry))}, not a table")
        unknown = sorted(set(entry) - ACCEPT_KEYS)
        if unknown:  # named, never left to be read as a missing one ('untill', 'bound')
            raise ProfviewError(
                path, f"[[accept]] {number}: unknown key {unknown[0]!r} (keys: {', '.join(sorted(ACCEPT_KEYS))})"
            )
        missing = [key for key in ("rule", "reason", "until") if key not in entry]
        if missing:
            raise ProfviewError(path, f"[[accept]] {number} has no {missing[0]} (each needs rule, reason and until)")
        until = entry["until"]
        until = parse_date(str(until), f"{path}: accept.until")
        accepted.append(Accepted(str(entry["rule"]), str(entry["reason"]), until))
    settings["accept"] = accepted
    return settings

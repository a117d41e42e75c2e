"""The compiled scanner against libraries that decode only the frame's fields, on the same files.

    python benchmarks/scanners.py [--runs 5] [--big TRACE] [--no-samples] [--base DIR]

Issue 42 asks, before keeping the C scanner (native/fastscan.c), how it compares with a well-kept
library that decodes the events with the frame's fields only.  Three decoders, each timed on the
inflated document (inflating is not timed, nor the import):

* ``c-scanner``: ``_fastscan.scan_events`` over the ``traceEvents`` array: typed columns, no
  Python object per event (what profview reads with);
* ``msgspec-typed``: ``msgspec.json.decode`` into a ``Struct`` per event holding only the frame's
  fields (``ph cat name pid tid ts dur id`` and an ``args`` Struct of ARG_COLUMNS' keys, text
  columns kept as ``Raw`` JSON; every other key is skipped, validated; ``gc=False`` Structs, as
  msgspec advises for bulk decoding): a Python object per event;
* ``orjson``: ``orjson.loads`` of the whole document (a DOM: every key and value).

``--base DIR`` adds ``c-scanner@base``: the C scanner of another checkout, imported from DIR on
PYTHONPATH (DIR/profview is that checkout, its ``_fastscan`` built): the scanner before a change,
against after, in the same run.

Each run of each decoder is a fresh process, runs interleaved (c, msgspec, orjson, c, ...), so
that a neighbour's load falls on all three alike.  The figure is CPU time (user + system of the
decode, ``time.process_time``), the median over runs; MB/s is the inflated JSON's MB (10^6
bytes) over it; ``x`` is CPU time over the C scanner's in the same run.  ``rows`` is how many events
each decoder returned (the second witness that they read the same array); a decoder that refuses a
file says so instead of a time.  Groups: gpt2_train_big (``--big``) and every ``samples/*.json.gz``
together (sum of CPU over the files).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIG = ROOT.parent / "shared" / "traces" / "gpt2_train_big.pt.trace.json.gz"
DECODERS = ("c-scanner", "msgspec-typed", "orjson")


def inflate(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def array_start(data: bytes) -> int:
    """Where the first event of the ``traceEvents`` array begins (its '{'), or -1 (no events)."""
    key = data.find(b'"traceEvents"')
    at = data.find(b"[", key) + 1 if key >= 0 else 0
    while at and at < len(data) and data[at : at + 1] in b" \t\r\n":
        at += 1
    return at if key >= 0 and data[at : at + 1] == b"{" else -1


def msgspec_decoder():  # type: ignore[no-untyped-def]
    """A decoder of the document into Structs with the frame's fields only (ARG_COLUMNS' keys)."""
    from typing import Any

    import msgspec
    import polars as pl

    from profview.parsers.schema import ARG_COLUMNS

    arg_fields = []
    for column, keys, dtype in ARG_COLUMNS:
        kind = msgspec.Raw if dtype == pl.String else Any  # text columns: the value's JSON, not decoded
        for number, key in enumerate(keys):
            arg_fields.append((f"{column}_{number}", kind, msgspec.field(default=None, name=key)))
    args = msgspec.defstruct("Args", arg_fields, gc=False)
    top = [(name, Any, None) for name in ("ph", "cat", "name", "pid", "tid", "id")]
    top += [("ts", float | None, None), ("dur", float | None, None), ("args", args | None, None)]
    event = msgspec.defstruct("Event", top, gc=False)  # untracked by the GC: msgspec's advice for bulk decoding
    events = msgspec.field(default_factory=list)
    document = msgspec.defstruct("Document", [("traceEvents", list[event], events)], gc=False)
    return msgspec.json.Decoder(document)


def child(decoder: str, files: list[str]) -> None:
    """Decode each file once with ``decoder``; print {file: [cpu seconds, rows] or "refused: ..."}."""
    import time

    documents = [inflate(Path(f)) for f in files]
    out: dict[str, object] = {}
    if decoder == "c-scanner":
        from profview.compiled import compiled_module

        scanner = compiled_module("_fastscan")
        if scanner is None:
            raise SystemExit("the compiled scanner is not built")
    elif decoder == "msgspec-typed":
        typed = msgspec_decoder()
    else:
        import orjson
    for name, data in zip(files, documents, strict=True):
        start = time.process_time()
        try:
            if decoder == "c-scanner":
                at = array_start(data)
                rows = scanner.scan_events(data, at, len(data), True)[0] if at >= 0 else 0
            elif decoder == "msgspec-typed":
                rows = len(typed.decode(data).traceEvents)
            else:
                rows = len(orjson.loads(data).get("traceEvents", []))
        except Exception as exc:  # a refusal is a result here, named in the table
            out[name] = f"refused: {type(exc).__name__}"
            continue
        out[name] = [time.process_time() - start, rows]
    print(json.dumps(out))


def run_group(label: str, files: list[Path], runs: int, base: str | None) -> None:
    size = sum(len(inflate(f)) for f in files) / 1e6
    decoders = (*DECODERS, "c-scanner@base") if base else DECODERS
    cpu: dict[str, list[float]] = {d: [] for d in decoders}
    rows: dict[str, int] = {}
    refused: dict[str, set[str]] = {d: set() for d in decoders}
    for _ in range(runs):
        for decoder in decoders:
            env = dict(os.environ, PYTHONPATH=base) if decoder.endswith("@base") and base else None
            command = [sys.executable, __file__, "--child", decoder.removesuffix("@base"), *map(str, files)]
            done = subprocess.run(command, check=True, capture_output=True, text=True, env=env, cwd=ROOT.parent)
            result = json.loads(done.stdout)
            total, count = 0.0, 0
            for name, value in result.items():
                if isinstance(value, str):
                    refused[decoder].add(f"{Path(name).name} ({value})")
                else:
                    total += value[0]
                    count += value[1]
            cpu[decoder].append(total)
            rows[decoder] = count
    base = statistics.median(cpu["c-scanner"])
    print(f"\n{label}: {len(files)} file(s), {size:.1f} MB of JSON, {runs} interleaved runs (median CPU s)")
    print(f"{'decoder':<15}{'CPU s':>9}{'MB/s':>9}{'x c':>8}{'rows':>11}")
    for decoder in decoders:
        seconds = statistics.median(cpu[decoder])
        print(f"{decoder:<15}{seconds:>9.3f}{size / seconds:>9.0f}{seconds / base:>8.2f}{rows[decoder]:>11}")
        for what in sorted(refused[decoder]):
            print(f"    refused {what} (not in its figures)")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--big", default=str(BIG), help="the large trace (skipped when absent)")
    parser.add_argument("--no-samples", action="store_true", help="leave out samples/*.json.gz")
    parser.add_argument("--base", help="a folder whose profview/ is another checkout (its scanner built)")
    args = parser.parse_args()
    big = Path(args.big)
    if big.is_file():
        run_group(big.name, [big], args.runs, args.base)
    else:
        print(f"{big}: absent, skipped")
    if not args.no_samples:
        run_group("samples/*.json.gz", sorted((ROOT / "samples").glob("*.json.gz")), args.runs, args.base)


if __name__ == "__main__":
    main()

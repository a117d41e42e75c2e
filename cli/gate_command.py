"""``profview diff BEFORE AFTER --fail-if RULE`` / ``--gate FILE.toml``: the CI gate's command line.

Exit codes: 0 pass (changes within the noise included, said as not significant); 1 a regression;
2 a usage or rule error, or an unreadable trace (one line naming the bad token or file, from the
error boundary); 3 not comparable, or not enough evidence when ``--inconclusive fail`` asks for
it; 4 an internal error (a bug: one line, ``PROFVIEW_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import typer

from ..errors import ProfviewError
from ..sanitize import clean

EXIT_CODES = {"pass": 0, "regression": 1, "inconclusive": 3, "incomparable": 3}
#: A bug inside the gate: not a verdict, and not the code of one.
INTERNAL_ERROR = 4


@dataclass
class GateArgs:
    """The gate's options as the command line gave them."""

    fail_if: list[str]
    gate_file: str | None
    fmt: str
    out: str | None
    force: bool
    inconclusive: str | None
    accept: list[str]
    reason: list[str]
    until: list[str]
    fdr: float | None
    min_share: float | None
    seed: int | None
    strict: bool
    no_cache: bool
    comm_pattern: str | None
    step_range: str | None = None


def _accepted(args: GateArgs) -> list:
    from ..gate.run import Accepted, parse_date

    if not (len(args.accept) == len(args.reason) == len(args.until)):
        raise ProfviewError(None, "each --accept RULE needs its own --reason TEXT and --until DATE")
    return [Accepted(r, why, parse_date(d)) for r, why, d in zip(args.accept, args.reason, args.until, strict=True)]


def gate(before: str, after: str, args: GateArgs) -> None:
    """Run the gate and exit with its code (see the module doc)."""
    from ..gate.formats import FORMATS, render
    from ..gate.run import GateOptions, run_gate

    if args.fmt not in FORMATS:
        raise ProfviewError(None, f"--format must be one of {', '.join(FORMATS)}, not {args.fmt!r}")
    settings = {}
    if args.gate_file is not None:
        from ..gate.config import read_gate_file

        settings = read_gate_file(args.gate_file)
    inconclusive = args.inconclusive or settings.get("inconclusive")
    if inconclusive not in (None, "pass", "fail"):
        raise ProfviewError(None, f"--inconclusive must be pass or fail, not {inconclusive!r}")
    options = GateOptions(
        rules=[*settings.get("rules", []), *args.fail_if],
        fdr=args.fdr if args.fdr is not None else settings.get("fdr", 0.05),
        min_share=args.min_share if args.min_share is not None else settings.get("min_share", 0.5),
        seed=args.seed if args.seed is not None else settings.get("seed", 0),
        accepted=[*settings.get("accept", []), *_accepted(args)],
        strict=args.strict or bool(settings.get("strict", False)),
        inconclusive=inconclusive or "pass",
        use_cache=not args.no_cache,
        comm_pattern=args.comm_pattern,
        step_range=args.step_range,
    )
    from ..gate.inputs import capture_paths
    from ..gate.run import check_options

    check_options(options)  # a bad rule is an error before any trace is read
    if args.out is not None and args.out != "-":
        from ..report.export import check_target

        check_target(args.out, inputs=(*capture_paths(before), *capture_paths(after)), overwrite=args.force)
    try:
        result = run_gate(before, after, options)
        text = render(result, args.fmt)
    except (ProfviewError, MemoryError, KeyboardInterrupt, OSError):
        raise  # the boundary's: a bad input (exit 2), out of memory, interrupted
    except Exception as exc:  # a bug: exit 4, never the code of a verdict
        if os.environ.get("PROFVIEW_DEBUG"):
            raise
        typer.echo(
            f"profview: error: gate: internal error ({type(exc).__name__}: {clean(exc)}); "
            "PROFVIEW_DEBUG=1 shows the traceback",
            err=True,
        )
        raise typer.Exit(INTERNAL_ERROR) from None
    if args.out is None or args.out == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        from ..report.export import write_text

        written = write_text(text, args.out, inputs=(*result.before, *result.after), overwrite=args.force)
        typer.echo(f"profview: gate {result.verdict}: wrote {clean(written)}", err=True)
    raise typer.Exit(EXIT_CODES[result.verdict])

"""The Timeline's event inspector: the selected event's figures first, then its name (at most two
lines), its launch arguments or inputs, where it came from and its Python stack.

Pure text building over :mod:`profview.analysis.tables.instance`; no widget.
"""

from __future__ import annotations

from rich.text import Text

from ....analysis.tables.instance import KernelInstance, OpCall, OpInstance
from ....frames import fmt_us
from ....report.wording import plural
from ....sanitize import clean
from ...widgets.text_fit import cap_lines


def occupancy_text(value: float | None) -> str:
    """``62.5%``, or ``–`` when Kineto did not estimate it (it writes 0 then)."""
    return "–" if value is None else f"{value:.1f}%"


def _inputs(call: OpCall) -> str:
    parts = []
    if call.input_dims:
        parts.append(f"dims {clean(call.input_dims)}")
    if call.input_type:
        parts.append(f"types {clean(call.input_type)}")
    return " · ".join(parts)


def kernel_lines(
    event: KernelInstance, origin: float, width: int, replay: str | None = None, unlinked: str | None = None
) -> list[Text]:
    """A GPU event: figures, name, launch arguments, launching call and operator, Python stack;
    ``replay``: where a graph replay holds it, said where no launching call is recorded (a replay
    cut by the window) in place of a guess at why; ``unlinked``: why the profile links no GPU
    work to a launching call at all (its ``launches`` view is missing), said instead of the guess."""
    where = f"GPU{event.device if event.device is not None else '?'} stream {event.stream}"
    head = Text(f"{event.kind} {fmt_us(event.dur)} at {fmt_us(event.ts - origin)}", style="bold")
    head.append(f" · {where} · correlation {event.correlation if event.correlation is not None else '–'}")
    lines = [head, *cap_lines(Text(clean(event.name), style="bold"), width, 2)]
    if event.kind == "kernel":
        args = [
            f"grid {clean(event.grid or '–')}",
            f"block {clean(event.block or '–')}",
            f"registers {event.registers if event.registers is not None else '–'}",
            f"shared mem {event.shared_mem:,} B" if event.shared_mem is not None else "shared mem –",
            f"occupancy {occupancy_text(event.occupancy)}",
        ]
        lines += cap_lines(Text(" · ".join(args)), width, 2)
    elif event.bytes is not None:
        rate = f" · {event.bytes / event.dur / 1e3:,.1f} GB/s" if event.dur > 0 else ""
        lines.append(Text(f"{plural(event.bytes, 'byte')}{rate}"))
    origin_text = Text()  # the operator first: at 80 columns the launching call is what gets cut
    if event.op is not None:
        origin_text.append("from ", style="dim")
        origin_text.append(clean(event.op.name), style="bold")
    if event.launch is not None:
        origin_text.append(" via " if event.op is not None else "launched by ", style="dim")
        origin_text.append(f"{clean(event.launch.name)} {fmt_us(event.launch.dur)} (thread {clean(event.launch.tid)})")
    if not origin_text.plain and replay is not None:  # a graph replay's node: named, not guessed at
        origin_text.append("replayed: ", style="dim")
        origin_text.append(clean(replay), style="bold")
    elif not origin_text.plain and unlinked is not None:
        origin_text.append(f"no launching call: {clean(unlinked)}", style="dim")
    elif not origin_text.plain:
        origin_text.append("no launching call recorded (launched before the trace window?)", style="dim")
    lines += cap_lines(origin_text, width, 1)
    inputs = _inputs(event.op) if event.op is not None else ""
    if inputs:
        lines += cap_lines(Text(inputs), width, 2)
    lines.append(python_line(event.python, width))
    return lines


def op_lines(event: OpInstance, origin: float, width: int) -> list[Text]:
    """A host call: figures, name, input dims and types, children, Python stack."""
    call = event.call
    head = Text(f"{call.kind} {fmt_us(call.dur)} at {fmt_us(call.ts - origin)}", style="bold")
    head.append(f" · thread {clean(call.tid)} · {plural(len(event.children), 'child', 'children')}")
    gpu = f"GPU work {plural(event.gpu_events, 'event')} {fmt_us(event.gpu_us)}" if event.gpu_events else "no GPU work"
    head.append(f" · {gpu}")
    lines = [head, *cap_lines(Text(clean(call.name), style="bold"), width, 2)]
    inputs = _inputs(call)
    lines += cap_lines(Text(inputs or "no input dims or types recorded", style="" if inputs else "dim"), width, 2)
    if event.children:
        kids = Text("children: ", style="dim")
        kids.append(", ".join(f"{clean(c.name)} {fmt_us(c.dur)}" for c in event.children[:12]))
        lines += cap_lines(kids, width, 1)
    lines.append(python_line(event.python, width))
    return lines


def python_line(frames: list[str], width: int) -> Text:
    """'py: innermost < … < outermost' on one line (the innermost frames matter most)."""
    if not frames:
        return Text("py: no Python stack recorded here", style="dim italic")
    line = Text("py: " + " < ".join(clean(f) for f in frames), style="italic")
    return cap_lines(line, width, 1, at_spaces=False)[0]


__all__ = ["kernel_lines", "occupancy_text", "op_lines", "python_line"]

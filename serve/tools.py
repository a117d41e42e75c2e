"""The read-only tools of ``profview mcp``, as plain functions of one :class:`Tools` object: each
takes paths inside the server's roots and answers one JSON object made by the same code as the
CLI's JSON (``summary --format json``, ``export -o .json``, ``query --tables``, the gate's
``--format json``), so an agent and a shell script read the same figures.  A problem is a
:class:`ProfviewError` of one line; the server turns it into a tool error.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import ProfviewError
from .limits import MAX_ROWS, bounded, check_count
from .roots import Roots

if TYPE_CHECKING:
    from ..jobs.job import Job
    from ..profiles.snapshot_profile import SnapshotProfile
    from ..profiles.trace_profile import Profile

#: The views ``view`` answers (a job's own views besides: ranks, collectives ...): what
#: ``profview export --view`` takes, less ``launches``, which is ``drill``.
TOOL_NAMES = ("summary", "tables", "query", "view", "drill", "diff", "gate")


class Tools:
    """The tools over one set of roots; the profiles opened are kept for the next call (a few,
    keyed by path, size and modification time, so a file written anew is read anew)."""

    def __init__(self, roots: Roots, use_cache: bool = True, keep: int = 4) -> None:
        self.roots = roots
        self.use_cache = use_cache
        self.keep = keep
        self._profiles: dict[tuple[object, ...], Profile] = {}
        self._snapshots: dict[tuple[object, ...], SnapshotProfile] = {}

    # -- inputs ---------------------------------------------------------------------------------

    def _key(self, path: str, capture: tuple[str, ...]) -> tuple[object, ...]:
        try:
            stat = os.stat(path)
        except OSError:
            raise ProfviewError(path, "no such file or folder") from None
        return (path, stat.st_size, stat.st_mtime_ns, capture)

    def profile(self, path: str, capture: list[str] | None = None) -> Profile:
        """One trace or table, loaded (or the one kept), its captures attached."""
        from ..profiles.loading import load

        real = self.roots.resolve(path)
        captures = tuple(self.roots.resolve(c) for c in capture or [])
        key = self._key(real, captures)
        if key not in self._profiles:
            profile = load(real, use_cache=self.use_cache)
            if captures:
                profile.use_capture(list(captures), use_cache=self.use_cache)
                profile.check_captures()
            while len(self._profiles) >= self.keep:
                self._profiles.pop(next(iter(self._profiles)))
            self._profiles[key] = profile
        return self._profiles[key]

    def snapshot(self, path: str) -> SnapshotProfile | None:
        """The memory snapshot ``path`` names (by content, as the CLI decides), loaded or the one kept;
        None where it is not one."""
        from ..parsers.snapshot.reader import looks_like_snapshot

        real = self.roots.resolve(path)
        if os.path.isdir(real) or not looks_like_snapshot(real):
            return None
        key = self._key(real, ())
        if key not in self._snapshots:
            from ..profiles.snapshot_profile import load_snapshot

            while len(self._snapshots) >= self.keep:
                self._snapshots.pop(next(iter(self._snapshots)))
            self._snapshots[key] = load_snapshot(real)
        return self._snapshots[key]

    def snapshot_directory(self, path: str) -> list[str] | None:
        """The per-rank memory snapshots of the folder ``path`` (None: it is no such folder)."""
        from ..jobs.snapshot_job import snapshot_directory

        return snapshot_directory(self.roots.resolve(path))

    def snapshots_of(self, path: str) -> tuple[list[str] | None, SnapshotProfile | None]:
        """What ``path`` is, as the CLI decides it before a trace or a job: a folder of per-rank
        memory snapshots (its files), or one snapshot (loaded), or neither (``(None, None)``)."""
        folder = self.snapshot_directory(path)
        return folder, None if folder is not None else self.snapshot(path)

    def snapshot_pair(self, before: str, after: str) -> tuple[SnapshotProfile, SnapshotProfile] | None:
        """Both sides as memory snapshots (None where neither is one); one without the other is one line."""
        pair = self.snapshot(before), self.snapshot(after)
        if pair == (None, None):
            return None
        if pair[0] is None or pair[1] is None:
            raise ProfviewError(None, "a memory snapshot compares with another memory snapshot only")
        return pair[0], pair[1]

    def is_job(self, path: str) -> bool:
        """Whether ``path`` names a job (a folder or archive of rank traces), as the CLI decides."""
        from ..jobs.inputs import is_job

        return is_job([self.roots.resolve(path)])

    @contextlib.contextmanager
    def job(self, path: str) -> Iterator[Job]:
        """A job, opened for one call (its worker processes joined after it)."""
        from ..jobs.job import open_job

        with open_job([self.roots.resolve(path)], use_cache=self.use_cache) as job:
            yield job

    # -- the tools ------------------------------------------------------------------------------

    def summary(self, path: str, capture: list[str] | None = None, top: int | None = None) -> dict[str, Any]:
        """``profview summary PATH --format json``'s document (a job's: ``profview.job-summary``)."""
        rows = check_count("top", top, 10)
        snapshots, snapshot = self.snapshots_of(path)
        if (snapshots is not None or snapshot is not None) and capture:
            raise ProfviewError(None, "capture: a trace's option, not a memory snapshot's")
        if snapshots is not None:
            from ..report.snapshot_job_summary import snapshot_job_document

            return snapshot_job_document(path, snapshots)
        if snapshot is not None:
            return snapshot.summary(rows)
        if self.is_job(path):
            if capture:
                raise ProfviewError(None, "capture: one trace's option, not a job's")
            from ..report.job_summary import job_summary_document, job_summary_figures

            with self.job(path) as job:
                return job_summary_document(job_summary_figures(job, rows))
        from ..report.profile_summary import summary_document, summary_figures

        return summary_document(summary_figures(self.profile(path, capture), rows, numbers=True))

    def _sources(self, paths: list[str], stack: contextlib.ExitStack) -> Any:
        from ..query.tables import job_tables, stacked, trace_tables

        if not paths:
            raise ProfviewError(None, "paths: give one or more traces or jobs")
        sources = []
        from ..query.tables import snapshot_job_tables, snapshot_tables

        for path in paths:
            snapshots, snapshot = self.snapshots_of(path)
            if snapshots is not None:
                sources.append(snapshot_job_tables(snapshots, label=path))
            elif snapshot is not None:
                sources.append(snapshot_tables(snapshot, label=path))
            elif self.is_job(path):
                sources.append(job_tables(stack.enter_context(self.job(path)), label=path, use_cache=self.use_cache))
            else:
                sources.append(trace_tables(self.profile(path), label=path))
        return stacked(sources)

    def tables(self, paths: list[str]) -> dict[str, Any]:
        """``profview query PATHS --tables``: each table, what a row is, its columns with type and
        unit (a table the inputs cannot give: why, in ``unavailable``)."""
        from ..query.tables import unit_of

        with contextlib.ExitStack() as stack:
            tables = self._sources(paths, stack)
            listed = []
            for name in tables:
                entry: dict[str, Any] = {"name": name, "about": tables.about.get(name, "")}
                try:
                    frame = tables[name]
                except ProfviewError as exc:
                    entry["unavailable"] = exc.problem
                else:
                    entry["columns"] = [
                        {"name": c, "type": str(t), "unit": unit_of(c) or None} for c, t in frame.schema.items()
                    ]
                listed.append(entry)
        return {"tables": listed}

    def query(self, paths: list[str], sql: str, limit: int | None = 100) -> dict[str, Any]:
        """``profview query PATHS -q SQL``'s answer: its first ``limit`` rows."""
        from ..query.engine import run_sql

        rows = check_count("limit", limit, 100)
        with contextlib.ExitStack() as stack:
            answer = run_sql(self._sources(paths, stack), sql)
        return bounded(answer, rows)

    def view(
        self, path: str, view: str, filter: str | None = None, sort: str | None = None, top: int | None = 100,
        step: int | None = None, iteration: int | None = None, ascending: bool = False,
    ) -> dict[str, Any]:
        """``profview export PATH --view VIEW [--filter] [--sort] [--step|--iteration] --top N``'s rows."""
        from ..profiles.views import refine, view_frame

        rows = check_count("top", top, 100)
        if view == "launches":
            raise ProfviewError(None, "view launches: use the drill tool (an operator or kernel to drill into)")
        snapshots, snapshot = self.snapshots_of(path)
        if snapshots is not None or snapshot is not None:
            if step is not None or iteration is not None:
                raise ProfviewError(None, "step, iteration: a trace's options, not a memory snapshot's")
            if snapshots is not None:
                from ..jobs.snapshot_job import SNAPSHOT_JOB_VIEWS, rank_rows, ranks_frame

                if view not in SNAPSHOT_JOB_VIEWS:
                    raise ProfviewError(None, f"a directory of memory snapshots has one view, ranks, not {view!r}")
                frame = ranks_frame(rank_rows(snapshots))
            elif snapshot is not None:
                frame = snapshot.view(view)
            return bounded(refine(frame, pattern=filter, sort=sort, ascending=ascending), rows)
        if self.is_job(path):
            from ..jobs.job import JOB_VIEWS

            if view not in JOB_VIEWS:
                raise ProfviewError(None, f"a job has no {view!r} view: choose one of {', '.join(JOB_VIEWS)}")
            if step is not None or iteration is not None:
                raise ProfviewError(None, "step, iteration: one trace's options, not a job's")
            with self.job(path) as job:
                frame = refine(job.view(view), pattern=filter, sort=sort, ascending=ascending)
            return bounded(frame, rows)
        profile = self.profile(path)
        frame = view_frame(profile, view, step=step, iteration=None if iteration is None else str(iteration))
        return bounded(refine(frame, pattern=filter, sort=sort, ascending=ascending), rows)

    def drill(
        self, path: str, kernel: str | None = None, op: str | None = None, step: int | None = None,
        top: int | None = 100,
    ) -> dict[str, Any]:
        """``profview export PATH --view launches --op NAME`` (the GPU work an operator launched) or
        ``--kernel NAME`` (the operators that launched a kernel): one of the two."""
        from ..profiles.views import view_frame

        rows = check_count("top", top, 100)
        if self.snapshot(path) is not None:
            raise ProfviewError(None, "drill: a memory snapshot has no kernels or operators (view: sites, stacks)")
        if (kernel is None) == (op is None):
            raise ProfviewError(None, "drill: give one of kernel or op")
        frame = view_frame(self.profile(path), "launches", op=op, kernel=kernel, step=step)
        return bounded(frame, rows)

    def diff(self, before: str, after: str, view: str | None = None, top: int | None = 100) -> dict[str, Any]:
        """``profview diff BEFORE AFTER --view VIEW -o .json``'s rows (kernels by default), with the
        comparison's notes (what could not be paired, and why)."""
        from ..diff.comparison import load_comparison
        from ..diff.job_comparison import diff_kind

        rows = check_count("top", top, 100)
        snapshots = self.snapshot_pair(before, after)
        if snapshots is not None:  # the two already loaded, never read again
            from ..diff.snapshot_comparison import SnapshotComparison

            return bounded(SnapshotComparison(*snapshots).view(view or "sites"), rows)
        first, second = self.roots.resolve(before), self.roots.resolve(after)
        if diff_kind(first, second) == "jobs":
            raise ProfviewError(None, "diff of two jobs: use profview diff BEFORE AFTER --view ranks -o OUT.json")
        comparison = load_comparison(first, second, use_cache=self.use_cache)
        name = view or "kernels"
        answer = bounded(comparison.view(name), rows)
        answer["notes"] = list(dict.fromkeys([*comparison.notes(name), *comparison.explanations(name)]))
        return answer

    def gate(self, before: str, after: str, rules: list[str]) -> dict[str, Any]:
        """``profview diff BEFORE AFTER --fail-if RULE ... --format json``'s document (each side one
        capture, or a folder or comma list of captures)."""
        from ..gate.formats import to_json
        from ..gate.run import GateOptions, run_gate

        if not rules or not all(isinstance(r, str) for r in rules):
            raise ProfviewError(None, "rules: give one or more, e.g. 'kernels.total_us > +5%'")
        if len(rules) > 100:
            raise ProfviewError(None, f"rules: at most 100, not {len(rules)}")
        snapshots = self.snapshot_pair(before, after)
        if snapshots is not None:
            from ..gate.snapshot_gate import evaluate_snapshot_rules, parse_snapshot_rule, snapshot_gate_document

            parsed = [parse_snapshot_rule(rule) for rule in rules]
            findings = evaluate_snapshot_rules(*snapshots, parsed)
            return snapshot_gate_document(snapshots[0].path, snapshots[1].path, findings)
        options = GateOptions(rules=list(rules), use_cache=self.use_cache)
        result = run_gate(self.roots.resolve_side(before), self.roots.resolve_side(after), options)
        document: dict[str, Any] = to_json(result)
        return document


__all__ = ["MAX_ROWS", "TOOL_NAMES", "Tools"]

"""The trace model and its primitives: what each event of a trace is, before any table.

From the parsed events frame (:mod:`profview.frames`) :mod:`.model` builds the linked
:class:`.model.TraceModel` (host operators and Python frames nested into
call trees by :mod:`.calltree`, GPU work joined to its launching runtime call by correlation,
ProfilerStep windows).  Beside it the small rules every family shares: event kinds
(:mod:`.events`), which kernels are communication (:mod:`.communication`), what was open on a
thread at an instant (:mod:`.at_time`), interval arithmetic (:mod:`.intervals`), the one regex
engine for names (:mod:`.name_rules`), each launching row's path (:mod:`.launch_index`) and
Polars scalars as floats (:mod:`.scalars`).  Imports nothing above it in ``analysis/``.
"""

"""What bounds each step: the critical path through host and GPU work, and what-if.

:mod:`.path` builds each step's dependency graph (host call order, launches, GPU stream order,
synchronisations) and its longest path; :mod:`.frames` turns a path into the views' frames (per
event, per name, per category); :mod:`.what_if` rescales chosen events and recomputes the path
(a model, labelled as such).  Uses the trace family only.
"""

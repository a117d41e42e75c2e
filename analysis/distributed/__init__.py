"""A whole distributed job: collectives matched across ranks and per-rank figures.

:mod:`.collectives` reads each rank's collective calls and matches them across ranks (who waited,
how long); :mod:`.ranks` makes the per-rank table, the step waits and the stragglers.  Uses the
trace family only; a rank's own tables come from the same families as a single trace.
"""

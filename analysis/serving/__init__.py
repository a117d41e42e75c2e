"""Serving and decode loops: iterations, their phases and tokens.

:mod:`.iterations` finds one row per iteration of a serving or decode loop (the host ranges its
annotations name, or the repeated range of a loop) with its requests, tokens, host, wall and GPU
time; :mod:`.names` reads the phase words and counts that serving frameworks put in range names;
:mod:`.phases` sums iterations per phase with the KV-growth fit.  Uses the trace and tables
families (and may use graphs, whose replays an iteration launches).
"""

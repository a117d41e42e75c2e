"""The CI gate (``profview diff BEFORE AFTER --fail-if RULE``): two sides of one or more captures
each, their per-step samples, the rules evaluated with a noise model, a comparability block and a
verdict, written in the format a CI reads.

:mod:`.inputs` finds each side's captures; :mod:`.comparability` checks the two sides are the same
kind of run; :mod:`.run` evaluates the rules (the statistics are :mod:`profview.analysis.diff`'s)
and gives the verdict; :mod:`.config` reads a gate file (TOML); :mod:`.formats` writes the result.
"""

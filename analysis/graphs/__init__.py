"""CUDA/HIP-graph replays attributed through their capture.

:mod:`.replays` finds the replays, graphs and nodes of a trace without any capture;
:mod:`.capture` reads the captures (of the same trace or of a capture trace) as launch sequences
with their operators, modules and Python lines; :mod:`.align` pairs each graph's nodes with one
capture's launches where that pairing is certain; :mod:`.attribution` joins the three into the
graph views and places each replayed kernel where its launch was captured.  Uses the trace and
tables families; does not import efficiency.
"""

"""Memory snapshots: what the caching allocator held, and when it held the most.

:mod:`.totals` sums a snapshot's segments and blocks as torch's ``_memory_viz segsum`` names the
figures (reserved, allocated, requested, free internal and external); :mod:`.sites` names each
stack's allocation site (the innermost frame in the user's code); :mod:`.replay` walks each
device's recorded events backwards from the end state, so active memory over time, its peak and
what was live at any event are absolute; :mod:`.views` makes the sites, peak, timeline, OOM and
annotation tables from those, and :mod:`.compare` two snapshots' sites and segments.  From the
snapshot frames of ``parsers/snapshot/frames.py`` only; imports no other family.
"""

"""The viewer on a memory snapshot: its own screen (summary, sites, peak, timeline, OOMs, segments)."""

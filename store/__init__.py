"""What profview keeps on disk: the trace cache, its keys, and the per-rank summaries of jobs."""

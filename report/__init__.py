"""What profview prints or writes: summaries, job and diff reports, exports."""

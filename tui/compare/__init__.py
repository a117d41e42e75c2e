"""Compare mode: two profiles side by side."""

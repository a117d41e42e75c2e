"""Two profiles or two jobs compared."""

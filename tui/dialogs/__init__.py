"""Modal screens: export, help, loading."""

"""Drill-downs: the screen, the routes from a table, the worker that computes them."""

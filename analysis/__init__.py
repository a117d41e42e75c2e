"""The analysis layer: pure functions over Polars frames, no I/O, one folder per family.

Each family computes one kind of figure from the frames below it; the import contracts in
pyproject.toml keep the order (a family imports only those listed after it here, and the four in
the middle do not import each other):

* :mod:`.diff` — two profiles or jobs compared (may use every family below);
* :mod:`.serving` — iterations, phases and tokens of serving and decode loops;
* :mod:`.graphs`, :mod:`.efficiency`, :mod:`.critical_path`, :mod:`.distributed` — graph replays
  through their capture; FLOPs, bytes, roofline and categories; what bounds each step; collectives
  and ranks of a job;
* :mod:`.tables` — the tables every view starts from (kernels, operators, steps, launches,
  overview, gaps, memory, modules);
* :mod:`.trace` — the linked trace model and the primitives every family shares.

Frames (all times in microseconds): **kernels** ``name, calls, total_us, mean_us, median_us,
min_us, max_us, std_us, pct`` with the launch shape; **ops** ``name, kind, calls, host_self_us,
host_total_us, device_self_us, device_total_us`` (GPU work no operator launched is the
``(unattributed)`` row, so device_self adds up to all GPU time); **steps** ``step, name, start_us,
duration_us`` and one ``*_us`` column per category; **launches** per operator the GPU work under it,
per kernel the operator chains and Python stacks that launched it.
"""

"""The analysis layer: functions over Polars frames, no I/O.

Frames (all times in microseconds):

* **kernels** (:mod:`.kernels`): ``name, calls, total_us, mean_us, median_us, min_us, max_us,
  std_us, pct`` (share of all kernel time) and the launch shape ``grid, block, registers,
  shared_mem, occupancy, shapes``.
* **ops** (:mod:`.operators`): ``name, kind, calls, host_self_us, host_total_us,
  device_self_us, device_total_us`` (+ ``input_dims`` grouped by shapes); GPU work that no
  operator launched is the ``(unattributed)`` row, so device_self adds up to all GPU time.
* **steps** (:mod:`.steps`): ``step, name, start_us, duration_us`` and one ``*_us`` column per
  category (kernel, memcpy, memset, communication, runtime, dataloader, cpu_exec, other).
* **communication** (:mod:`.communication`): the GPU frame with ``backend`` and
  ``collective_name`` per event (null backend: not communication); host time in CPU collectives.
* **launches** (:mod:`.launches`): per operator, the GPU work under it; per kernel, the operator
  chains and Python stacks that launched it.
"""

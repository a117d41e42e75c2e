"""How close to the hardware each operator runs: FLOPs, bytes, rates, roofline and categories.

:mod:`.perf_model` sizes every operator call from its recorded arguments (:mod:`.op_args`) with
the model its name selects (:mod:`.op_models`: GEMM, attention, convolution, norms, pointwise,
fused and Triton kernels in :mod:`.work`), promotes dtypes as torch does
(:mod:`.dtype_promotion`) and rates the result against the device's peaks
(:mod:`.device_peaks`).  :mod:`.categories` says what kind of work each GPU event is, and
:mod:`.triton` reads what TorchInductor recorded of its compiled kernels.  Uses the trace family
only; it does not import graphs (a replayed call is sized by composing both in ``profiles/``).
"""

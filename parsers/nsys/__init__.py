"""Nsight Systems exports (``nsys export --type sqlite``) read into the documented events frame.

The export is opened read-only and immutable (:mod:`.database`); kernels, memory copies and sets
become GPU events, CUDA runtime and driver calls host calls on their thread, NVTX push/pop ranges
the operator and annotation tree (PyTorch's ``emit_nvtx`` text parsed by :mod:`.nvtx_text`), so
every view reads it as it reads a Kineto trace. :mod:`.magic` tells an export, and the raw
``.nsys-rep`` report that only NVIDIA's tool converts, from their first bytes.
"""

"""The top-level keys of a Chrome trace kept as its metadata (both readers keep the same ones)."""

#: Top-level keys kept as trace metadata (anything else is ignored).
METADATA_KEYS = (
    "schemaVersion",
    "deviceProperties",
    "distributedInfo",
    "displayTimeUnit",
    "baseTimeNanoseconds",
    "traceName",
    "trace_id",
    "with_stack",
    "record_shapes",
    "profile_memory",
    "with_flops",
    "with_modules",
    "cuda_runtime_version",
    "cuda_driver_version",
    "cupti_version",
    "hip_runtime_version",
    "hip_driver_version",
    "roctracer_version",
)

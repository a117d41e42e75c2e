"""What an export says about itself: the nsys and schema versions, and its GPUs.

The GPUs become ``deviceProperties`` entries as Kineto writes them (``id``, ``name``,
``totalGlobalMem``, ``numSms``, ``computeMajor``/``computeMinor``), so the overview lists them and
the perf model finds their peaks; nsys's bandwidth (B/s), clock (Hz) and L2 size are kept too.
"""

from __future__ import annotations

from typing import Any

from .database import Export

#: The export's own metadata table: ``META_DATA_EXPORT`` since 2023, ``EXPORT_META_DATA`` before.
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")
#: TARGET_INFO_GPU column → deviceProperties key.
GPU_KEYS = {
    "name": "name",
    "totalMemory": "totalGlobalMem",
    "smCount": "numSms",
    "computeMajor": "computeMajor",
    "computeMinor": "computeMinor",
    "memoryBandwidth": "memoryBandwidth",
    "clockRate": "clockRate",
    "l2CacheSize": "l2CacheSize",
    "chipName": "chipName",
}


def export_info(export: Export) -> dict[str, Any]:
    """``product_version``, ``schema_version`` and the table they came from; ``schema_version``
    is None for an export that does not say."""
    for table in META_TABLES:
        if export.has(table, "name", "value"):
            values = dict(export.scalar_rows(f'SELECT name, value FROM "{table}"'))
            return {
                "product_version": values.get("EXPORT_PRODUCT_VERSION"),
                "schema_version": values.get("EXPORT_SCHEMA_VERSION"),
                "metadata_table": table,
            }
    return {"product_version": None, "schema_version": None, "metadata_table": None}


def device_properties(export: Export) -> list[dict[str, Any]]:
    """One ``deviceProperties`` entry per GPU in ``TARGET_INFO_GPU`` (none when it is absent)."""
    held = export.tables.get("TARGET_INFO_GPU")
    if held is None:
        return []
    id_column = "cuDevice" if "cuDevice" in held else "id" if "id" in held else None
    columns = [column for column in GPU_KEYS if column in held]
    if id_column is None:
        return []
    selected = ", ".join(f'"{column}"' for column in (id_column, *columns))
    devices: dict[int, dict[str, Any]] = {}
    for row in export.scalar_rows(f"SELECT {selected} FROM TARGET_INFO_GPU"):
        if not isinstance(row[0], int):
            continue
        entry: dict[str, Any] = {"id": row[0]}
        entry.update(
            {GPU_KEYS[column]: value for column, value in zip(columns, row[1:], strict=True) if value is not None}
        )
        devices.setdefault(row[0], entry)
    return [devices[key] for key in sorted(devices)]

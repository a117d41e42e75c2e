"""Category colours and fill characters (distinct characters keep bars readable without colour)."""

from __future__ import annotations

from ..analysis.steps import CATEGORIES, CATEGORY_LABELS

CATEGORY_STYLE = {
    "kernel": "#4c9be8",
    "memcpy": "#e8a33c",
    "memset": "#c97bd6",
    "communication": "#e5534b",
    "runtime": "#57ab5a",
    "dataloader": "#d4c44a",
    "cpu_exec": "#6cb6c4",
    "other": "#8b949e",
}
CATEGORY_CHAR = {
    "kernel": "█",
    "memcpy": "▓",
    "memset": "▒",
    "communication": "░",
    "runtime": "▚",
    "dataloader": "▞",
    "cpu_exec": "▪",
    "other": "·",
}

__all__ = ["CATEGORIES", "CATEGORY_CHAR", "CATEGORY_LABELS", "CATEGORY_STYLE"]

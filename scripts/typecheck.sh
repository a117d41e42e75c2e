#!/usr/bin/env bash
# Type-check the package with mypy (settings in pyproject.toml: strict on frames, parsers and analysis).
# The checkout is the package `profview` whatever its folder is called, so mypy reads it through a
# link named profview in a temporary folder.  Usage: scripts/typecheck.sh [PYTHON]  (default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
python="${1:-.venv/bin/python}"
link=$(mktemp -d)
trap 'rm -rf "$link"' EXIT
ln -s "$PWD" "$link/profview"
MYPYPATH="$link" "$python" -m mypy --config-file pyproject.toml --cache-dir "$link/.mypy_cache" -p profview

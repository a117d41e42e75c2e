#!/usr/bin/env bash
# Build the compiled modules with AddressSanitizer + UndefinedBehaviorSanitizer and run the scanner
# tests (the scanner's own tests and the differential fuzz against the pure reader, and the Nsight
# Systems column reader's, the memory snapshot opcode reader's on real, generated and damaged pickles) under them.
# Usage: scripts/sanitized_scanner.sh [PYTHON]   (default .venv/bin/python); run from the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${1:-.venv/bin/python}"
[[ "$python" = /* ]] || python="$PWD/$python"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/profview"
tar --exclude=./.venv --exclude=./.git --exclude='*.so' -cf - . | tar -xf - -C "$work/profview"
include=$("$python" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
suffix=$("$python" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
for module in fastscan calltree snapshot_reader; do
    gcc -shared -fPIC -O1 -g -fno-omit-frame-pointer -std=c11 \
        -fsanitize=address,undefined -fno-sanitize-recover=undefined \
        -I"$include" "native/$module.c" -o "$work/profview/_$module$suffix"
done
# the Nsight Systems column reader, where SQLite's headers are installed (it is optional there too)
if [[ -f /usr/include/sqlite3.h ]]; then
    gcc -shared -fPIC -O1 -g -fno-omit-frame-pointer -std=c11 \
        -fsanitize=address,undefined -fno-sanitize-recover=undefined \
        -I"$include" native/sqlite_columns.c -lsqlite3 -o "$work/profview/_sqlite_columns$suffix"
    nsys_tests=(profview/tests/parsers/nsys/test_nsys_columnar.py)
else
    nsys_tests=()
fi
runtime="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
cd "$work"
export LD_PRELOAD="$runtime" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
export PYTHONPATH="$work" PROFVIEW_CACHE_DIR="$work/cache"
"$python" -c "import profview._fastscan as m, profview._calltree as c, profview._snapshot_reader as s, sys; \
assert all(x.__file__.startswith('$work') for x in (m, c, s)), m.__file__; print('sanitized:', m.__file__, s.__file__)"
"$python" -m pytest -q -p no:cacheprovider profview/tests/parsers/test_fast_scanner.py profview/tests/parsers/test_differential_fuzz.py \
    profview/tests/parsers/test_chunked_reading.py profview/tests/parsers/test_categorical_frame.py "${nsys_tests[@]}" \
    profview/tests/parsers/test_snapshot_compiled_reader.py profview/tests/parsers/test_memory_snapshot_reader.py

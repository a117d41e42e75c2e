#!/usr/bin/env bash
# The benchmark on a machine that has no network and no profview install (a lent 16-core GPU node):
# everything comes from a bundle folder made on a machine with the registries, then
# `benchmarks/run.py --quick --parts …` runs as anywhere else, HTA in its own site folder.
#
#   benchmarks/device.sh BUNDLE [run.py arguments…]
#   benchmarks/device.sh .bench --parts cores --pin 0,1 --runs 3   # issue 32: 16 cores vs 2 of them
#
# BUNDLE holds (made for that machine's Python, e.g. 3.12, x86-64):
#   whl/*.whl         profview's dependencies that the machine lacks (pip download --no-deps)
#   rt.tar.xz         the polars runtime wheel's files (xz: the wheel alone is 54 MB)
#   hta/*.whl         HolisticTraceAnalysis 0.5.0, pydot, ijson;  plotly.tar.xz: plotly's files
#   so/*.so           profview's compiled modules built for that Python (pip wheel . with it)
#   TRACE             the trace (default: gpt2_train_big.pt.trace.json.gz)
set -euo pipefail
bundle=$1
shift
cd "$(dirname "$0")/.."
site=$(mktemp -d /tmp/profview-site.XXXX)
hta_site=$(mktemp -d /tmp/hta-site.XXXX)
pip_install=(python3 -m pip install -q --no-index --no-deps --no-cache-dir)
"${pip_install[@]}" --target "$site" "$bundle"/whl/*.whl
tar xJf "$bundle/rt.tar.xz" -C "$site"
if [ -d "$bundle/hta" ]; then  # optional: `--parts cores` (16 cores vs 2) needs no HTA
  "${pip_install[@]}" --target "$hta_site" "$bundle"/hta/*.whl
  tar xJf "$bundle/plotly.tar.xz" -C "$hta_site"
fi
ln -s "$PWD" "$site/profview"  # the checkout is the package (pyproject: package-dir)
cp "$bundle"/so/*.so .
export PYTHONPATH=$site
printf '#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n' "$hta_site" >"$site/hta-python"
chmod +x "$site/hta-python"
# First imports compile the bytecode: done here, so that no measured run pays for it.
python3 -m profview summary samples/resnet50_train_amp.pt.trace.json.gz >/dev/null
python3 -c "from profview.compiled import compiled_module as c; assert c('_fastscan') and c('_calltree'), 'not compiled'"
[ ! -d "$bundle/hta" ] || "$site/hta-python" -c "import hta.trace_analysis"
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(python3 --version)"
python3 benchmarks/run.py --quick --hta-python "$site/hta-python" --trace "$bundle/gpt2_train_big.pt.trace.json.gz" "$@"

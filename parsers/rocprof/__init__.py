"""rocprofv3's JSON output (``rocprofv3 --output-format json``) read into the events frame.

:mod:`.sniff` tells the document from its first bytes (without Polars), :mod:`.layout` declares
its parts, :mod:`.reader` turns them into the events frame and metadata a Chrome trace gives, so
every view reads a rocprofv3 run unchanged.
"""

"""``python -m profview``: the profview command."""

from profview.cli import main

main()

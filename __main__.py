"""``python -m profview``: the profview command."""

from .cli import main

main()

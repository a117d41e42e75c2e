"""``python -m profview``: the profview command."""

from .cli.app import main

main()

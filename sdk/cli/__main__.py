"""``python -m feltlab.cli``: the ``feltlab`` command."""

from feltlab.cli import main

main()

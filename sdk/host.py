"""What this host gives a computation: :func:`usable_cores`, the one count of the cores a
process may run its workers on (``feltlab simulate``'s and ``submit``'s chunks, the index
grid's analyses, the power simulations, the seed search)."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the OS says
    (``os.sched_getaffinity``, Linux), else the machine's count (``os.cpu_count``), at
    least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1

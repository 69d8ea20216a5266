"""The progress bar of a long count of rounds (``simulate``, ``protect``): description, bar,
done of total, time left, on the console's stderr and only on a terminal."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn


def rounds_progress(console: Console, *, quiet: bool = False) -> Progress:
    """A transient bar on ``console``, disabled when ``quiet`` (JSON output) or when the
    console is not a terminal (a pipe, a file, a test)."""
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=quiet or not console.is_terminal,
        transient=True,
    )

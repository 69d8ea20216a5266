"""Named kill points: the moments between two writes of a campaign folder where a kill -9 (the
OOM killer, a reboot, a station killed) leaves a state that ``--resume`` must take back to the
same verdict (docs/station.md, "Crash windows").

Production code calls :func:`reach` at each point of :data:`POINTS`; it does nothing unless a
hook is set (:func:`set_hook`).  A test sets a hook in a forked child that kills its own
process with SIGKILL at the point it names, so every window is tested deterministically, as
FoundationDB's and TiKV's fail points do, and never by the luck of a timer.
"""

from __future__ import annotations

from collections.abc import Callable

POINTS = (
    "state-written",  # campaign.json written (a new campaign, or a resume's): no part yet
    "journal-opened",  # a part's journal created under its temporary name, no header yet
    "journal-named",  # the journal, its header written, renamed to its name; no BLF yet
    "part-opened",  # the part's BLF (empty) and journal in place, no frame yet
    "blf-written",  # a closing part's BLF in place; not yet in campaign.json, journal kept
    "part-recorded",  # the closed part in campaign.json; its journal not yet removed
    "recovered-blf",  # a resume rebuilt a BLF from its journal; not yet in campaign.json
    "recovered-recorded",  # the rebuilt part in campaign.json; its journal not yet removed
    "part-set-aside",  # a resume set an unclosed part aside (to collect it again)
    "outputs-written",  # report.html, junit.xml and manifest.json written; record.json not yet
)
"""Every kill point, in the order a campaign reaches them."""

_hook: Callable[[str], None] | None = None


def set_hook(hook: Callable[[str], None] | None) -> None:
    """Call ``hook(point)`` at every kill point from now on (None: none).  Raises ValueError
    for a hook that is not callable."""
    global _hook
    if hook is not None and not callable(hook):
        raise ValueError(f"a kill-point hook must be callable, got {hook!r}")
    _hook = hook


def reach(point: str) -> None:
    """The campaign is at kill point ``point`` (one of :data:`POINTS`): the hook, if any, is
    called with it."""
    if _hook is not None:
        _hook(point)

"""The Madness 21 PAR sheet with a jackpot panel's declared prize table.

A Madness 21 win is paid the prize the panel displays (rule 15A.7), a sum of cents drawn
from the panel's declared prize table ``[[cents, weight], ...]`` (the ``[device]
prize_table`` of a panel profile, docs/certification.md), whatever the stake.  Per unit
staked, a win is then worth ``average prize / stake``: the PAR sheet states the stake it is
computed at (by default the wager's minimum) and the average prize, and its return and
house edge include the jackpot outcome (the sheet without a prize table leaves the jackpot
outcome out, and so reads as a 95% house edge).

Plugins provide panel profiles by name (``feltlab_register_panel_profiles``); the default
is ``jackpot``, which the rig registers (its bundled simulated panel): the SDK never reaches
into the rig's files.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pluggy

from feltlab.errors import PluginError, WagerError
from feltlab.math.parsheet import OutcomeLine, ParSheet, par_sheet
from feltlab.plugin_manager import collect, get_plugin_manager
from feltlab.wagers import WagerType

MAX_PROFILE_BYTES = 1 << 20


DEFAULT_PANEL = "jackpot"
"""The panel profile ``feltlab math madness21`` reads when given none (the rig's)."""


class PanelProfiles:
    """The jackpot panel profiles plugins register (``feltlab_register_panel_profiles``):
    ``paths`` maps each name to its TOML file."""

    def __init__(self) -> None:
        self.paths: dict[str, Path] = {}

    def register(self, name: str, path: Path) -> None:
        """The hook's callback.  Raises :class:`PluginError` for a name registered twice
        with different files."""
        taken = self.paths.get(name)
        if taken is not None and taken != Path(path):
            raise PluginError(
                f"panel profile {name!r} is registered as both {taken} and {path}; rename one"
            )
        self.paths[name] = Path(path)


def panel_profiles(pm: pluggy.PluginManager | None = None) -> dict[str, Path]:
    """The panel profiles every plugin of ``pm`` (default: every installed plugin) registers,
    by name.  Raises :class:`PluginError` naming a plugin that fails while registering."""
    pm = pm or get_plugin_manager()
    return collect(pm, "feltlab_register_panel_profiles", PanelProfiles()).paths


def bundled_panel_profile() -> Path:
    """The default panel profile (:data:`DEFAULT_PANEL`, registered by the rig).  Raises
    :class:`WagerError` when no plugin registers it or its file is missing."""
    path = panel_profiles().get(DEFAULT_PANEL)
    if path is None or not path.is_file():
        raise WagerError(
            f"no {DEFAULT_PANEL!r} jackpot panel profile is installed (the rig registers it): "
            "give one with --profile PATH"
        )
    return path


MAX_PRIZE_CENTS = 10**12
"""The largest prize a panel's prize table may declare (cents): the rig's profile check and
the PAR sheet refuse more."""
MAX_PRIZE_WEIGHT = 2**32
"""The largest weight of a prize-table row (the panel draws from 32-bit weights)."""


def load_prize_table(path: Path) -> tuple[tuple[int, int], ...]:
    """The ``[device] prize_table`` of the profile at ``path``: ``(cents, weight)`` rows.
    Raises :class:`WagerError` naming the problem (missing, unreadable, not TOML, no prize
    table, a prize or weight that is not a positive integer)."""
    try:
        if not path.is_file():
            raise WagerError(f"profile {str(path)!r} is not a file: give a panel profile (TOML)")
        if path.stat().st_size > MAX_PROFILE_BYTES:
            raise WagerError(f"profile {str(path)!r} is larger than 1 MiB: not a panel profile")
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise WagerError(f"cannot read the profile {str(path)!r}: {exc}") from None
    device = data.get("device")
    table = device.get("prize_table") if isinstance(device, dict) else None
    if not isinstance(table, list) or not table:
        raise WagerError(
            f"profile {str(path)!r} declares no [device] prize_table: give a jackpot panel "
            "profile (prize_table = [[cents, weight], ...])"
        )
    rows = []
    for i, row in enumerate(table):
        ok = isinstance(row, list) and len(row) == 2
        ok = ok and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in row)
        ok = ok and row[0] <= MAX_PRIZE_CENTS and row[1] <= MAX_PRIZE_WEIGHT
        if not ok:
            raise WagerError(
                f"profile {str(path)!r}: prize_table row {i} is {row!r}; each row is "
                f"[cents, weight], integers, cents in 1..{MAX_PRIZE_CENTS} and weight in "
                f"1..{MAX_PRIZE_WEIGHT}"
            )
        rows.append((int(row[0]), int(row[1])))
    return tuple(rows)


def average_prize(prizes: tuple[tuple[int, int], ...]) -> Fraction:
    """The mean prize in cents of a ``(cents, weight)`` table, exactly."""
    total = sum(w for _, w in prizes)
    return Fraction(sum(c * w for c, w in prizes), total)


def jackpot_par_sheet(
    wager: WagerType,
    decks: int,
    prizes: tuple[tuple[int, int], ...],
    *,
    stake: int,
    source: str,
) -> ParSheet:
    """The exact PAR sheet of a panel-paid ``wager`` (Madness 21) with its jackpot outcomes
    paid the average prize of ``prizes`` on a stake of ``stake`` cents: ``average prize /
    stake`` per unit.  ``source``: where the prize table comes from (for the note).  Raises
    :class:`WagerError` for a stake outside the wager's limits."""
    wager.limits.check(stake, f"{wager.title} PAR sheet stake")
    base = par_sheet(wager, decks)
    mean = average_prize(prizes)
    per_unit = mean / stake
    lines = []
    ret = second = Fraction(0)
    for ln in base.lines:
        pays = per_unit if ln.pays is None else ln.pays
        r = ln.probability * pays
        ret += r
        second += ln.probability * pays * pays
        lines.append(OutcomeLine(ln.outcome, ln.combinations, ln.probability, pays, r))
    note = (
        f"the jackpot outcome pays the panel's average prize ${float(mean) / 100:,.2f} "
        f"({source}: {len(prizes)} prizes) on a stake of ${stake / 100:,.2f}, "
        f"{float(per_unit):.4f} per unit; the prize is a fixed sum, so the return per unit "
        "depends on the stake"
    )
    return replace(
        base,
        lines=tuple(lines),
        return_=ret,
        house_edge=-ret,
        variance=second - ret * ret,
        note=note,
        average_prize=mean,
        stake=stake,
    )

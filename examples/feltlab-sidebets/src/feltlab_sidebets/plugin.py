"""The plugin module named by the ``feltlab`` entry point: registers both wagers."""

from __future__ import annotations

from collections.abc import Callable

from feltlab import WagerType, hookimpl
from feltlab_sidebets.bust_bonus import BustBonus
from feltlab_sidebets.buster import BusterBlackjack
from feltlab_sidebets.lucky_ladies import LuckyLadies
from feltlab_sidebets.twenty_one_plus_three import TwentyOnePlusThree


@hookimpl
def feltlab_register_wagers(register: Callable[[type[WagerType]], None]) -> None:
    """Register :class:`TwentyOnePlusThree`, :class:`LuckyLadies`, :class:`BusterBlackjack`
    and :class:`BustBonus`."""
    register(TwentyOnePlusThree)
    register(LuckyLadies)
    register(BusterBlackjack)
    register(BustBonus)

"""The templates of ``feltlab new wager NAME --decided round-end``: a play-decided wager
(read from the round record, the dealer playing out) and its tests (see
:mod:`feltlab.scaffold`)."""

from __future__ import annotations

PLUGIN = '''\
"""{title}: a feltlab wager plugin decided by the round's play (registered through the
`feltlab` entry point)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from feltlab import Decided, Limits, Paytable, Placed, WagerType, hookimpl
from feltlab.wagers import as_pays

OUTCOMES = ("lose", "dealer_busts")
"""Outcome indexes: 0 is the losing outcome."""


class {cls}(WagerType):
    """{title}: wins when the dealer's final hand busts.

    Placed with the main wager before any card is dealt; decided at the end of the round
    from the round record (``round_fields``: ``dealer_bust``), the dealer completing the hand
    even when every box has busted or has a blackjack (``dealer_plays_out``).

    Paytable ``standard`` (to 1): the dealer busts 2.
    Source: <cite the paytable's source here>.
    """

    name = "{name}"
    title = "{title}"
    rule = ""
    placed = Placed.BEFORE_DEAL
    decided = Decided.ROUND_END
    round_fields = ("dealer_bust",)
    dealer_plays_out = True
    min_decks = 4
    max_decks = 8
    default_limits = Limits(100, 10_000)  # cents: $1 to $100 in $1 chips
    paytables: ClassVar[Mapping[str, Paytable]] = {{
        "standard": Paytable(
            "standard", OUTCOMES, as_pays([-1, 2]), "<cite the paytable's source here>"
        ),
    }}

    def classify_round(self, records: npt.NDArray[np.void]) -> npt.NDArray[np.uint8]:
        """Outcome index of each ``(n,)`` round record (``feltlab.record.RECORD_DTYPE``)."""
        r = self._checked_record(records)
        return r["dealer_bust"].astype(np.uint8)


@hookimpl
def feltlab_register_wagers(register: Callable[[type[WagerType]], None]) -> None:
    """Register :class:`{cls}`."""
    register({cls})
'''

TEST = '''\
"""{title} against feltlab's conformance kit, and its PAR sheet."""

from feltlab import playmath
from feltlab.conformance import WagerConformance
from feltlab.rules import Rules
from {module} import {cls}


class Test{cls}Conformance(WagerConformance):
    """Hooks, paytables, settlement on the round record, exact v simulated, decks, cents,
    determinism."""

    wager = "{name}"  # found through the `feltlab` entry point: `pip install -e .` first


def test_six_deck_par_sheet():
    sheet = playmath.play_par_sheet({cls}(), Rules.preset("vegas_s17"))
    assert sheet.method == "exact"
    # the dealer, drawing out to 17 under S17 from six decks, busts 28.19% of the time
    p_bust = float(sheet.hit_frequency)
    assert abs(p_bust - 0.28192) < 1e-5
    # return 2 p - (1 - p): the house keeps 1 - 3 p = 15.42% of each wager
    assert abs(float(sheet.house_edge) - (1 - 3 * p_bust)) < 1e-12
'''

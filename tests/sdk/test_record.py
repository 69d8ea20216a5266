"""The round record (feltlab.record): the Python round engine and the C simulator give the
same record, field for field, for the same cards; the dealer plays out only when a wager in
play requires it (Buster Blackjack's rule)."""

from collections.abc import Mapping
from dataclasses import replace
from typing import ClassVar

import numpy as np
import numpy.typing as npt
import pytest

from feltlab import native
from feltlab.core_rules import simulator_rules
from feltlab.engine import Table, play_round
from feltlab.math import strategy_tables as simstrategy
from feltlab.plugins.main import Main
from feltlab.record import DealerRecord, records_array
from feltlab.rules import DealerBlackjackTakes, Rules
from feltlab.shoe import FixedCards
from feltlab.wagers import Decided, Paytable, WagerType, as_pays


class DealerBusts(WagerType):
    """A test wager read from the round record: wins 1 to 1 when the dealer busts."""

    name = "dealer_busts"
    title = "Dealer busts"
    decided = Decided.ROUND_END
    round_fields = ("dealer_bust",)
    paytables: ClassVar[Mapping[str, Paytable]] = {
        "even": Paytable("even", ("lose", "bust"), as_pays([-1, 1]), "test")
    }

    def classify_round(self, records: npt.NDArray[np.void]) -> npt.NDArray[np.uint8]:
        r = self._checked_record(records)
        return r["dealer_bust"].astype(np.uint8)


class PlaysOut(DealerBusts):
    name = "plays_out"
    dealer_plays_out = True


VARIANTS = {
    "vegas_s17": Rules.preset("vegas_s17"),
    "vegas_h17_late_surrender": Rules.preset("vegas_h17").replace(surrender="late"),
    "nz": Rules.preset("nz"),
    "nz_takes_all": Rules.preset("nz").replace(dealer_blackjack_takes=DealerBlackjackTakes.ALL),
}


@pytest.mark.parametrize("plays_out", [False, True])
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_engine_and_simulator_records_agree_round_by_round(name: str, plays_out: bool) -> None:
    rules = VARIANTS[name]
    tables = simstrategy.strategy_tables(rules)
    sr = replace(simulator_rules(rules, tables), dealer_plays_out=plays_out)
    n = 600
    res = native.simulate_rounds(native.Xoshiro256StarStar(11), sr, n, trace_cap=64, record=True)
    assert res.record is not None and res.trace is not None and res.trace_len is not None
    side = PlaysOut() if plays_out else DealerBusts()
    policy = simstrategy.TablePolicy(tables)
    one_card_dealer = completed_for_nobody = 0
    for i in range(n):
        cards = res.trace[i, : res.trace_len[i]].tolist()
        table = Table(rules, FixedCards(cards), [Main(), side], boxes=1)
        result = play_round(table, [(0, "p", "main", 1000), (0, "p", side.name, 100)], policy)
        assert result.record is not None
        mine = result.record.array()
        assert mine.dtype == native.RECORD_DTYPE
        assert mine.tobytes() == res.record[i : i + 1].tobytes(), (name, i, cards)
        # the engine's settlement is the classifier on the record
        s = result.find(0, "p", side.name)
        assert s.outcome == ("bust" if mine["dealer_bust"][0] else "lose")
        one_card_dealer += int(mine["dealer_n_cards"][0]) == 1
        h = mine[0]
        finished = all(
            h["hand_bust"][j] or h["hand_blackjack"][j] or h["hand_surrendered"][j]
            for j in range(h["n_hands"])
        )
        completed_for_nobody += finished and int(h["dealer_n_cards"]) > 2
    if plays_out:
        assert one_card_dealer == 0 and completed_for_nobody > 10
    elif rules.no_hole_card:
        assert one_card_dealer > 10  # every hand busted: the dealer took no second card


def test_dealer_record_fields() -> None:
    # 8♠ 8♥ 8♦ (codes rank * 4 + suit): 24, bust on three cards, not suited
    d = DealerRecord.of([7 * 4 + 3, 7 * 4 + 2, 7 * 4 + 1])
    assert (d.total, d.bust, d.n_cards, d.suited, d.blackjack) == (24, True, 3, False, False)
    s = DealerRecord.of([0 * 4 + 2, 12 * 4 + 2])  # A♥ K♥
    assert (s.total, s.blackjack, s.suited, s.up) == (21, True, True, 2)
    assert records_array([])["dealer_total"].shape == (0,)

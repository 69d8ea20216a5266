"""Basic strategy computed for any Rules, checked cell by cell against published charts.

Reference chart: "4-Deck to 8-Deck Blackjack Strategy", Wizard of Odds
(https://wizardofodds.com/games/blackjack/strategy/4-decks/), dealer stands on soft 17,
double after split, no surrender; reproduced e.g. at
http://www.high-rollercasinos.com/blackjack-basic-strategy-table/.  For the dealer hitting
soft 17 the same source's H17 chart differs in three cells: double 11 v A, A,7 v 2 and
A,8 v 6 (also stated at http://casinoblackjackplay.com/BlackjackRules/blackjack-rules-chart).
Letters: H hit, S stand, D double (Dh/Ds both D here), P split.  Columns: dealer 2..10, A.
"""

from __future__ import annotations

from collections.abc import Callable

from feltlab import Rules
from feltlab.math.strategy import BasicStrategy, chart, dealer_distribution

S17_CHART = """\
hard 5   H H H H H H H H H H
hard 6   H H H H H H H H H H
hard 7   H H H H H H H H H H
hard 8   H H H H H H H H H H
hard 9   H D D D D H H H H H
hard 10  D D D D D D D D H H
hard 11  D D D D D D D D D H
hard 12  H H S S S H H H H H
hard 13  S S S S S H H H H H
hard 14  S S S S S H H H H H
hard 15  S S S S S H H H H H
hard 16  S S S S S H H H H H
hard 17  S S S S S S S S S S
hard 18  S S S S S S S S S S
hard 19  S S S S S S S S S S
hard 20  S S S S S S S S S S
soft 13  H H H D D H H H H H
soft 14  H H H D D H H H H H
soft 15  H H D D D H H H H H
soft 16  H H D D D H H H H H
soft 17  H D D D D H H H H H
soft 18  S D D D D S S H H H
soft 19  S S S S S S S S S S
soft 20  S S S S S S S S S S
pair A   P P P P P P P P P P
pair 2   P P P P P P H H H H
pair 3   P P P P P P H H H H
pair 4   H H H P P H H H H H
pair 5   D D D D D D D D H H
pair 6   P P P P P H H H H H
pair 7   P P P P P P H H H H
pair 8   P P P P P P P P P P
pair 9   P P P P P S P P S S
pair 10  S S S S S S S S S S
"""

H17_CHANGES = {("hard 11", 11): "D", ("soft 18", 2): "D", ("soft 19", 6): "D"}


def _parse(text: str) -> dict[str, dict[int, str]]:
    out = {}
    for line in text.splitlines():
        parts = line.split()
        row = " ".join(parts[:2])
        out[row] = dict(zip(range(2, 12), parts[2:], strict=True))
    return out


def test_vegas_s17_matches_the_published_4_to_8_deck_chart() -> None:
    assert chart(Rules.preset("vegas_s17")) == _parse(S17_CHART)


def test_vegas_h17_matches_the_published_h17_chart() -> None:
    expected = _parse(S17_CHART)
    for (row, up), letter in H17_CHANGES.items():
        expected[row][up] = letter
    assert chart(Rules.preset("vegas_h17")) == expected


def test_dealer_bust_probability_with_a_6_up_infinite_deck() -> None:
    # Griffin, The Theory of Blackjack, table of dealer outcomes (S17, no blackjack): 0.4232
    assert round(dealer_distribution(6, False, True)[22], 4) == 0.4232


def test_nz_policy_never_doubles_a_soft_total(nz: Rules, cards: Callable[[str], list[int]]) -> None:
    from feltlab.engine import Decision, DecisionView

    legal = frozenset({Decision.HIT, Decision.STAND})
    view = DecisionView(nz, 0, 0, tuple(cards("AH 7C")), cards("4D")[0], 1, False, legal)
    assert BasicStrategy(nz).decide(view) is Decision.STAND  # soft 18 v 4, no double
    view = DecisionView(
        nz, 0, 0, tuple(cards("5H 6C")), cards("10D")[0], 1, False, legal | {Decision.DOUBLE}
    )
    assert BasicStrategy(nz).decide(view) is Decision.DOUBLE  # 11 v 10 under original-only

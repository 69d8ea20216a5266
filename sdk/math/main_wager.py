"""The exact mathematics of the main wager: the C core's combinatorial analyzer applied to a
:class:`feltlab.Rules`, and the main wager's PAR sheet.

Method (native/src/analyzer.c): every player hand composition against every up card, over
the exact composition of a freshly shuffled shoe; splits exact for the strategy by grouping
split outcomes by their pattern of pair and non-pair second cards (E. Farmer).  Strategy
``cdz``: the composition-dependent optimum with the pre-split strategy reused after
splitting (CDZ-); ``table``: the total-dependent tables the C simulator plays
(:func:`feltlab.math.strategy_tables.strategy_tables`), so ``feltlab simulate --fresh-shoe``
estimates exactly this figure.  Matches Farmer's analyzer v7.6 to 1e-6 percentage points
(tests/math/test_analyzer.py).

No hole card: exact for every settlement.  Under "original" and "original and busted" a
split box loses one unit to a dealer blackjack unless every split hand has busted first (the
dealer then takes no second card and the busted wagers are lost whole); that joint event is
enumerated exactly over the hands' busting plays, for every split that is played (analyzer
version 2, issue 41: nz split to 4 is exact).  A split not played needs no term under
"original" (it only lowers the split's value); under "original and busted" one whose value
plus the term's bound (the share of blackjack cards left) stays below the play chosen needs
none either, and one that does, with too many busting plays for the smaller budget of a split
not played, is left without it: ``Analysis.p_split_approx`` (the sheet's ``note``) gives the
probability of such deals, and the sheet's house edge is then labelled "approximate".

The net result's distribution (the SD, skewness, every outcome's probability) is computed,
never simulated: unsplit rounds from the analyzer's hand distributions, split rounds by
enumerating every play of every split hand over the exact shoe, the dealer's outcome taken
off the exact cards left (native/src/analyzer_dist.c), for peek and every no-hole-card
settlement.  Its mean equals the exact expectation to rounding (1e-15).  One term can be
approximate: rounds that re-split to 3-4 hands where the enumeration exceeds its budget,
matched to their exact probability and expectation; the sheet then says "approximate",
names the term and bounds each outcome's probability by that term's mass.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.cards import RANK_LETTERS
from feltlab.core_rules import SURRENDER_CODES, core_fields
from feltlab.native.analyzer import (
    ACTIONS,
    BLACKJACK,
    DEALER_OUTCOMES,
    DOUBLE,
    SPLIT,
    SPLIT_NET0,
    SURRENDER,
    Analysis,
    AnalyzerRules,
    hand_index,
    shoe_counts,
)
from feltlab.rules import HoleCard, Rules


class Strategy(StrEnum):
    """The main wager's strategies (E. Farmer's post-split terms): CDZ- (the pre-split play
    reused), CDP1 (the optimal play for the first split hand's shoe, kept for every split
    hand), CDP (optimal for each count of pair cards out), all three composition-dependent
    before splitting; and the simulator's total-dependent tables.  A ``str``: the value is
    the analyzer's name (``feltlab.native.analyzer.STRATEGIES``) and the command line's."""

    CDZ = "cdz"
    CDP1 = "cdp1"
    CDP = "cdp"
    TABLE = "table"


UP_LABELS = RANK_LETTERS[:10]
LETTERS = {0: "S", 1: "H", 2: "D", 3: "P", 4: "R", BLACKJACK: "BJ"}
"""Chart letters: stand, hit, double, split (P), surrender (R), blackjack."""


def analyzer_rules(
    rules: Rules, strategy: str = "cdz", counts: tuple[int, ...] | None = None
) -> AnalyzerRules:
    """The analyzer's :class:`~feltlab.native.AnalyzerRules` for ``rules`` (a full shoe of
    ``rules.decks`` decks unless ``counts`` gives the composition).  ``strategy``: one of
    a :class:`Strategy` (or its value).  Raises ValueError for another strategy."""
    if strategy not in {s.value for s in Strategy}:
        raise ValueError(f"strategy must be one of {', '.join(Strategy)}, got {strategy!r}")
    kw: dict[str, Any] = {}
    if strategy == Strategy.TABLE:
        from feltlab.math.strategy_tables import strategy_tables  # start-up

        t = strategy_tables(rules)
        pair = t.pair.copy()
        pair[9:] = 0  # ten-valued pairs are never split by these tables
        kw = {"hard": t.hard, "soft": t.soft, "pair": pair, "surr": t.surr}
    return AnalyzerRules(
        counts=counts if counts is not None else shoe_counts(rules.decks),
        **core_fields(rules),
        surrender=SURRENDER_CODES[rules.surrender],
        strategy=strategy,
        **kw,
    )


def analyze_main(
    rules: Rules,
    strategy: str = "cdz",
    counts: tuple[int, ...] | None = None,
    *,
    split_dist: bool = False,
    threads: int = 0,
) -> Analysis:
    """The analyzer's :class:`~feltlab.native.Analysis` of the main wager under ``rules``
    (``split_dist``: with the exact distribution of split rounds, ``Analysis.split_net``;
    ``threads``: up cards side by side, 0 one per online CPU, the same figures for any)."""
    r = dataclasses.replace(analyzer_rules(rules, strategy, counts), threads=threads)
    if split_dist:
        r = dataclasses.replace(r, split_dist=True)
    return native.analyze(r)


def headline_probabilities(
    a: Analysis, dist: dict[float, float], *, peek: bool
) -> dict[str, float]:
    """The PAR sheet's headline probabilities of a round from the analysis ``a`` and the
    round's net distribution ``dist`` (``peek``: the dealer checks for blackjack, so no
    decision is taken against one): ``player_blackjack`` (a two-card 21 dealt, whatever
    the dealer holds), ``dealer_blackjack`` (the dealer's two cards a blackjack), ``win``,
    ``push``, ``loss`` (the round's net above, at, below 0), ``double`` (the initial hand
    doubled), ``split`` (the initial pair split), ``surrender`` (the initial hand surrendered);
    each a float in [0, 1]."""
    bj = hand_index(0, 9)
    live = a.prob * (1.0 - a.p_dealer_bj) if peek else a.prob
    return {
        "player_blackjack": float(a.prob[bj].sum()),
        "dealer_blackjack": float((a.prob * a.p_dealer_bj).sum()),
        "win": sum(v for k, v in dist.items() if k > 0),
        "push": sum(v for k, v in dist.items() if k == 0),
        "loss": sum(v for k, v in dist.items() if k < 0),
        "double": float(live[a.action == DOUBLE].sum()),
        "split": float(live[a.action == SPLIT].sum()),
        "surrender": float(live[a.action == SURRENDER].sum()),
    }


def _hand_label(a: int, b: int) -> str:
    names = UP_LABELS
    if a == b:
        return f"pair {names[a]}"
    if a == 0:
        return f"soft {11 + b + 1}" if b < 9 else "blackjack"
    return f"hard {a + b + 2}"


@dataclass(frozen=True)
class ChartCell:
    """One cell of the strategy chart: the ``hand`` (e.g. "hard 16", "soft 18", "pair 8",
    or a two-card composition "6-T"), the up card, the strategy's ``action`` letter and
    its expectation ``ev`` per initial unit, and every allowed action's expectation."""

    hand: str
    cards: str
    up: str
    action: str
    ev: float
    actions: dict[str, float]


@dataclass(frozen=True)
class MainParSheet:
    """The main wager's PAR sheet under ``rules`` and ``strategy`` (per initial unit).

    ``return_`` the expected net result of a round, ``house_edge`` its negative;
    ``distribution`` the probability of each net result (units) of the round, exact when
    ``distribution_method`` is "exact"; ``std_dev`` from that distribution; ``chart`` every
    two-card hand against every up card; ``insurance`` the return of insurance per unit
    insured against an ace up (2 to 1), ``even_money`` the expectation of taking even money
    on a blackjack against an ace (1, certain) beside declining it.
    """

    rules: Rules
    strategy: str
    return_: float
    house_edge: float
    distribution: dict[float, float]
    distribution_method: str
    std_dev: float
    skewness: float
    headline: dict[str, float]
    house_edge_method: str
    chart: tuple[ChartCell, ...]
    insurance: float
    even_money: dict[str, float]
    dealer: npt.NDArray[np.float64]
    note: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form, in the shape of the other PAR sheets (``house_edge.value``)
        with ``method``: "exact"."""
        return {
            "wager": "main",
            "title": "Main wager",
            "rules": self.rules.to_dict(),
            "strategy": self.strategy,
            "method": self.house_edge_method,
            "return": {"value": self.return_},
            "house_edge": {"value": self.house_edge, "method": self.house_edge_method},
            "distribution": {
                "method": self.distribution_method,
                "outcomes": [
                    {"net": k, "probability": v} for k, v in sorted(self.distribution.items())
                ],
            },
            "std_dev": self.std_dev,
            "skewness": self.skewness,
            "probabilities": self.headline,
            "insurance": {"return": self.insurance},
            "even_money": self.even_money,
            "dealer": {
                UP_LABELS[u]: dict(zip(DEALER_OUTCOMES, map(float, self.dealer[u]), strict=True))
                for u in range(10)
            },
            "chart": [
                {
                    "hand": c.hand,
                    "cards": c.cards,
                    "up": c.up,
                    "action": c.action,
                    "ev": c.ev,
                    "actions": c.actions,
                }
                for c in self.chart
            ],
            "note": self.note,
        }


def _insurance(rules: Rules) -> float:
    # an ace up, the player's two cards unknown: P(ten in the hole) over the shoe less the ace
    counts = shoe_counts(rules.decks)
    n = sum(counts) - 1
    p = counts[9] / n
    return 2 * p - (1 - p)


def main_par_sheet(rules: Rules, strategy: str = "cdz") -> MainParSheet:
    """The main wager's PAR sheet under ``rules`` by the combinatorial analyzer (see the
    module docstring for the method and its one approximation)."""
    a = analyze_main(rules, strategy, split_dist=True)
    cells: list[ChartCell] = []
    for x in range(10):
        for y in range(x, 10):
            i = hand_index(x, y)
            for u in range(10):
                if a.prob[i, u] <= 0:
                    continue
                act = int(a.action[i, u])
                evs = {
                    ACTIONS[k]: float(a.action_ev[i, u, k])
                    for k in range(5)
                    if not math.isnan(a.action_ev[i, u, k])
                }
                if act == BLACKJACK:
                    evs = {"blackjack": float(a.value[i, u])}
                cells.append(
                    ChartCell(
                        _hand_label(x, y),
                        f"{UP_LABELS[x]}-{UP_LABELS[y]}",
                        UP_LABELS[u],
                        LETTERS[act],
                        float(a.value[i, u]),
                        evs,
                    )
                )
    bj = hand_index(0, 9)
    q = float(a.p_dealer_bj[bj, 0])
    even_money = {"take": 1.0, "decline": float(a.value[bj, 0]), "p_dealer_blackjack": q}
    dist, method, note = round_distribution(rules, a, strategy)
    if a.p_split_approx > 0:
        note = (note + "; " if note else "") + (
            f"approximate term: deals of probability {a.p_split_approx:.2e} split with the "
            "every-hand-busts-before-the-dealer's-blackjack term left out (too many busting "
            "plays): that term is at most the share of blackjack cards left (7 units on it "
            "under 'original'), and a split not played errs only by what it could gain over "
            f"the play chosen, so the house edge is within {100 * a.ev_approx_bound:.2e} pp"
        )
    mean = sum(k * v for k, v in dist.items())
    var = sum((k - mean) ** 2 * v for k, v in dist.items())
    skew = sum((k - mean) ** 3 * v for k, v in dist.items()) / var**1.5 if var > 0 else 0.0
    return MainParSheet(
        rules=rules,
        strategy=strategy,
        return_=a.ev,
        house_edge=-a.ev,
        distribution=dist,
        distribution_method=method,
        std_dev=math.sqrt(var),
        skewness=skew,
        headline=headline_probabilities(a, dist, peek=rules.hole_card is HoleCard.PEEK),
        house_edge_method="approximate" if a.p_split_approx > 0 else "exact",
        chart=tuple(cells),
        insurance=_insurance(rules),
        even_money=even_money,
        dealer=a.dealer,
        note=note,
    )


def round_distribution(
    rules: Rules, a: Analysis, strategy: str = "cdz"
) -> tuple[dict[float, float], str, str]:
    """The probability of each net result of a round (units of the initial wager):
    ``(distribution, method, note)``, from an analysis run with ``split_dist`` (every round
    enumerated, split rounds included: native/src/analyzer_dist.c).  ``method`` is "exact",
    or "approximate" with ``note`` naming the approximated term (re-split rounds past the
    enumeration budget, or under ``strategy`` "cdp" every re-split round, matched to their
    exact mass and expectation) and its bound: each outcome's probability is within that
    term's probability of the exact one."""
    bj = float(rules.blackjack_pays)
    dist: dict[float, float] = {}
    values = (-2.0, -1.0, -0.5, 0.0, 1.0, 2.0, bj)
    for v, p in zip(values, a.net_dist, strict=True):
        if p > 0:
            dist[v] = dist.get(v, 0.0) + float(p)
    for k, p in enumerate(a.split_net):
        if p > 0:
            net = float(k - SPLIT_NET0)
            dist[net] = dist.get(net, 0.0) + float(p)
    if a.p_split_dist_approx <= 0:
        return dist, "exact", ""
    bound = 100 * a.p_split_dist_approx
    note = (
        "approximate term: rounds that re-split to 3-4 hands "
        + (
            "(CDP plays their split hands by the count of pair cards out) "
            if strategy == Strategy.CDP
            else "past the enumeration budget "
        )
        + f"(probability {a.p_split_dist_approx:.3e}) have the hands still to play drawn "
        f"independently from the shoe at the re-split, matched to their exact probability "
        f"and expectation; every other round is exact, so each outcome's probability is "
        f"within {bound:.2e} pp of the exact one"
    )
    return dist, "approximate", note

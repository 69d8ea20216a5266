"""feltlab-sidebets: the conformance kit on both wagers, and their PAR sheets against the
house edges published by the Wizard of Odds.

Sources (house edges and per-outcome counts, read on the pages below):

- 21+3: https://wizardofodds.com/games/blackjack/side-bets/21plus3/
  "Version 1" (every win 9 to 1): 6 decks 5,013,320 combinations, return -0.032386; house
  edge 4.24% (4 decks), 3.24% (6 decks), 2.74% (8 decks).  "Version 3" (100/35/33/10/5),
  6 decks: suited trips 1,040, three of a kind 25,272, straight flush 10,368, straight
  155,520, flush 292,896, loss 4,528,224 combinations.
- Lucky Ladies: https://wizardofodds.com/games/blackjack/side-bets/lucky-ladies/
  "Pay Table A" (1000/125/19/9/4), 6 decks: 9,294,695,280 permutations, queen of hearts pair
  with dealer blackjack 135,360, queen of hearts pair 2,738,340, matched 20 43,105,500, suited
  20 193,112,640, unsuited 20 744,863,040; return -0.247089 (house edge 24.71%).  8 decks:
  house edge 24.05% (Pay Table A) and 16.73% (Pay Table B), as quoted from the same analysis
  by http://www.onlineblackjack.org/blog/?p=853 and https://www.betfirm.com/lucky-ladies/.
"""

from fractions import Fraction

import pytest
from feltlab_sidebets import LuckyLadies, TwentyOnePlusThree

from feltlab.conformance import WagerConformance
from feltlab.math import parsheet


class TestTwentyOnePlusThreeConformance(WagerConformance):
    wager = "twenty_one_plus_three"
    rounds = 300_000


class TestLuckyLadiesConformance(WagerConformance):
    wager = "lucky_ladies"
    rounds = 300_000
    # its own count (eor) enumerates four-card deals over 53 shoe compositions: about 10 s
    # of CPU a paytable; `feltlab protect lucky_ladies --count eor` gives it
    # (docs/protection.md), so this suite counts with Hi-Lo and the suit count only
    protection_counts = ("hilo", "suit")


def _edge_pct(sheet):
    return round(100 * float(sheet.house_edge), 2)


@pytest.mark.parametrize(("decks", "edge"), [(4, 4.24), (6, 3.24), (8, 2.74)])
def test_21_plus_3_original_house_edge(decks, edge):
    # Wizard of Odds, 21+3 Version 1: 4.24% / 3.24% / 2.74% for 4 / 6 / 8 decks
    assert _edge_pct(parsheet.par_sheet(TwentyOnePlusThree(paytable="original"), decks)) == edge


def test_21_plus_3_six_decks_combinations_and_return():
    sheet = parsheet.par_sheet(TwentyOnePlusThree(paytable="original"), 6)
    # ordered deals of three cards; the Wizard counts unordered combinations (3! orders)
    assert sheet.total_combinations == 6 * 5_013_320
    combos = {ln.outcome: ln.combinations // 6 for ln in sheet.lines}
    assert combos == {
        "suited_trips": 1_040,
        "three_of_a_kind": 25_272,
        "straight_flush": 10_368,
        "straight": 155_520,
        "flush": 292_896,
        "lose": 4_528_224,
    }
    assert round(float(sheet.return_), 6) == -0.032386  # Version 1: return -0.032386
    v3 = parsheet.par_sheet(TwentyOnePlusThree(paytable="version3"), 6)
    # Version 3's published line returns sum to -0.041427
    assert round(float(v3.return_), 6) == -0.041427


def test_21_plus_3_common_paytable_follows_from_the_published_counts():
    # No published edge for 100/40/30/10/5 is cited here: its exact return follows from the
    # published six-deck combinations above.
    pays = {"suited_trips": 100, "straight_flush": 40, "three_of_a_kind": 30, "straight": 10}
    pays |= {"flush": 5, "lose": -1}
    combos = {"suited_trips": 1_040, "three_of_a_kind": 25_272, "straight_flush": 10_368}
    combos |= {"straight": 155_520, "flush": 292_896, "lose": 4_528_224}
    expected = Fraction(sum(pays[k] * combos[k] for k in pays), 5_013_320)
    assert parsheet.par_sheet(TwentyOnePlusThree(), 6).return_ == expected


def test_lucky_ladies_pay_table_a_six_decks_matches_every_published_line():
    sheet = parsheet.par_sheet(LuckyLadies(paytable="A"), 6)
    assert sheet.total_combinations == 9_294_695_280  # 312 * 311 * 310 * 309 permutations
    assert {ln.outcome: ln.combinations for ln in sheet.lines} == {
        "queen_of_hearts_pair_dealer_blackjack": 135_360,
        "queen_of_hearts_pair": 2_738_340,
        "matched_20": 43_105_500,
        "suited_20": 193_112_640,
        "unsuited_20": 744_863_040,
        "lose": 8_310_740_400,
    }
    assert round(float(sheet.return_), 6) == -0.247089  # house edge 24.71%


@pytest.mark.parametrize(("paytable", "edge"), [("A", 24.05), ("B", 16.73)])
def test_lucky_ladies_eight_decks(paytable, edge):
    assert _edge_pct(parsheet.par_sheet(LuckyLadies(paytable=paytable), 8)) == edge

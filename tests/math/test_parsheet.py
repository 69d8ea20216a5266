"""Exact PAR sheets against closed forms and published figures."""

import time
from fractions import Fraction as F
from typing import ClassVar

import numpy as np
import numpy.typing as npt
import pytest

from feltlab.cli.render.par_sheets import par_sheets_text
from feltlab.errors import WagerError
from feltlab.math import parsheet
from feltlab.plugins.insurance import Insurance
from feltlab.plugins.perfect_pairs import PerfectPairs
from feltlab.plugins.super_sevens import SuperSevens
from feltlab.wagers import Paytable, WagerType


@pytest.mark.parametrize("decks", range(1, 9))
def test_perfect_pairs_closed_forms(decks: int) -> None:
    # P(perfect) = (D-1)/(52D-1), P(coloured) = D/(52D-1), P(mixed) = 2D/(52D-1)
    sheet = parsheet.par_sheet(PerfectPairs(), decks)
    p = {ln.outcome: ln.probability for ln in sheet.lines}
    assert p["perfect_pair"] == F(decks - 1, 52 * decks - 1)
    assert p["coloured_pair"] == F(decks, 52 * decks - 1)
    assert p["mixed_pair"] == F(2 * decks, 52 * decks - 1)
    assert sum(p.values()) == 1
    assert sheet.total_combinations == 52 * decks * (52 * decks - 1)


def test_perfect_pairs_pay_scale_two_return_at_eight_decks() -> None:
    # rule 15B.7 Pay Scale Two (6/12/25 to 1), 8 decks: return exactly -17/415
    sheet = parsheet.par_sheet(PerfectPairs(paytable="two"), 8)
    assert sheet.return_ == F(-17, 415)
    assert sheet.house_edge == F(17, 415)
    assert sheet.hit_frequency == F(4 * 8 - 1, 52 * 8 - 1)  # any pair: (4D - 1)/(52D - 1)


def test_super_sevens_six_decks_house_edge() -> None:
    # the common paytable 3/50/100/500/5000 on the first three cards: 11.400% at 6 decks
    sheet = parsheet.par_sheet(SuperSevens(), 6)
    assert round(float(sheet.house_edge) * 100, 3) == 11.400
    assert sheet.house_edge == F(14288, 125333)
    assert sheet.total_combinations == 312 * 311 * 310


def test_insurance_off_the_top_six_decks() -> None:
    # conditional on an ace up: P(ten) = 96/311, pays 2 to 1: edge 23/311
    sheet = parsheet.par_sheet(Insurance(), 6)
    assert sheet.house_edge == F(23, 311)
    assert sheet.total_combinations == 24 * 311
    assert "ace" in sheet.note


class _Blackjack(WagerType):
    name = "bj_probe"
    title = "Player blackjack (probe)"
    card_roles = ("P1", "P2")
    paytables: ClassVar = {"p": Paytable("p", ("no", "blackjack"), (F(-1), F(1)))}

    def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        v = np.minimum((self._checked(cards) >> 2) + 1, 10)
        bj = ((v[:, 0] == 1) & (v[:, 1] == 10)) | ((v[:, 0] == 10) & (v[:, 1] == 1))
        out: npt.NDArray[np.uint8] = bj.astype(np.uint8)
        return out


def test_player_blackjack_probability_six_decks() -> None:
    sheet = parsheet.par_sheet(_Blackjack(), 6)
    assert sheet.lines[1].probability == F(192, 4043)


def test_multiplicities_sum_to_falling_factorial() -> None:
    t = parsheet.code_tuples(3)
    assert t.shape == (52**3, 3)
    for d in (1, 4, 8):
        assert int(parsheet.multiplicities(t, d).sum()) == 52 * d * (52 * d - 1) * (52 * d - 2)


def test_three_card_sheet_is_fast() -> None:
    t0 = time.perf_counter()
    parsheet.par_sheet(SuperSevens(), 8)
    assert time.perf_counter() - t0 < 5  # generous; the measured figure is in benchmarks/


def test_render_formats() -> None:
    sheets = [parsheet.par_sheet(PerfectPairs(), 6)]
    md = par_sheets_text(sheets, "md")
    assert "| perfect_pair |" in md and "House edge" in md
    csv_text = par_sheets_text(sheets, "csv")
    assert csv_text.splitlines()[0].startswith("wager,paytable,decks,outcome")
    js = par_sheets_text(sheets, "json")
    assert '"exact": "' in js
    with pytest.raises(ValueError, match="unknown format"):
        par_sheets_text(sheets, "xml")


def test_bad_wagers_are_named() -> None:
    class NoCards(WagerType):
        name = "nocards"
        title = "No cards"

    with pytest.raises(WagerError, match="no card_roles"):
        parsheet.par_sheet(NoCards(), 6)

    class Broken(_Blackjack):
        name = "broken"

        def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
            return np.full(len(cards), 7, np.uint8)

    with pytest.raises(WagerError, match="one index into its 2 outcomes"):
        parsheet.par_sheet(Broken(), 6)

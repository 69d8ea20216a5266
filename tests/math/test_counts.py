"""feltlab.math.counts: the built-in counts' published tags, running and true counts, the two
suit counts (Jacobson's and the richest suit's excess), the wager's own count and the one-line
refusals."""

from __future__ import annotations

import pytest

from feltlab.errors import CountError
from feltlab.math.counts import (
    BUILTIN,
    balanced_round,
    bucket_value,
    builtin_count,
    code_count,
    eor_count,
    rank_count,
    running_count,
    suit_imbalance,
    suit_range,
    true_count,
)
from feltlab.math.eor import side_bet_eor
from feltlab.plugin_manager import collect_wagers, get_plugin_manager

# tags A, 2..9, T from the sources named in feltlab.math.counts
PUBLISHED = {
    "hilo": (-1, 1, 1, 1, 1, 1, 0, 0, 0, -1),
    "ko": (-1, 1, 1, 1, 1, 1, 1, 0, 0, -1),
    "hiopt1": (0, 0, 1, 1, 1, 1, 0, 0, 0, -1),
    "hiopt2": (0, 1, 1, 2, 2, 1, 1, 0, 0, -2),
    "omega2": (0, 1, 1, 2, 2, 2, 1, 0, -1, -2),
    "zen": (-1, 1, 1, 2, 2, 2, 1, 0, 0, -2),
    "halves": (-2, 1, 2, 2, 3, 2, 1, 0, -1, -2),  # Wong's halves, doubled
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_builtin_tags_are_the_published_ones(name: str) -> None:
    c = BUILTIN[name]
    ten = PUBLISHED[name]
    assert c.rank_tags == ten + (ten[9],) * 3
    assert c.source
    assert c.balanced is (name != "ko")


def test_unbalanced_ko_reads_as_a_running_count_from_its_initial_count() -> None:
    ko = BUILTIN["ko"]
    assert ko.per_deck == 4
    assert ko.index_mode == "running"
    assert ko.initial_running_count(6) == 4 - 4 * 6  # Vancura and Fuchs
    assert ko.initial_running_count(1) == 0
    assert BUILTIN["hilo"].initial_running_count(6) == 0


def test_halves_is_stored_doubled_with_scale_two() -> None:
    assert BUILTIN["halves"].scale == 2
    assert BUILTIN["hilo"].scale == 1


def test_running_and_true_counts_by_hand() -> None:
    hilo = BUILTIN["hilo"]
    # 5 of clubs (+1), ace of spades (-1), king (-1), 2 (+1), 3 (+1): +1
    seen = [4 * 4, 0 * 4 + 3, 12 * 4 + 1, 1 * 4, 2 * 4 + 2]
    assert running_count(hilo, seen) == 1
    assert true_count(3, 156) == 1.0  # 3 per 3 decks remaining
    assert true_count(-5, 104) == -2.5
    assert bucket_value(-2.5, 1) == -3  # floored, not truncated
    assert bucket_value(2.5, 1) == 2
    assert bucket_value(2.5, 2) == 5
    ko = BUILTIN["ko"]
    assert running_count(ko, seen, decks=6) == -20 + 1
    seven = 6 * 4
    assert running_count(hilo, [*seen, seven]) == 1  # a 7 is 0 in Hi-Lo, +1 in KO
    assert running_count(ko, [*seen, seven], decks=6) == -20 + 2


def test_suit_imbalance_by_hand() -> None:
    assert suit_imbalance([78, 78, 78, 78]) == 0.0  # a full 6-deck shoe
    # 104 cards left, 32 hearts: (52 * 32 - 13 * 104) / 104 = 3 hearts over a deck's 13
    assert suit_imbalance([24, 24, 32, 24]) == 3.0
    with pytest.raises(CountError, match="4 suits"):
        suit_imbalance([1, 2, 3])


def test_jacobsons_suit_count_by_hand() -> None:
    """Jacobson's count is the most abundant suit less the least abundant (per deck left),
    not the richest suit's excess: the two differ when the poorest suit is short."""
    assert suit_range([78, 78, 78, 78]) == 0.0  # a full 6-deck shoe
    # 104 cards left, 32 hearts and 24 of each other suit: (32 - 24) * 52 / 104 = 4
    assert suit_range([24, 24, 32, 24]) == 4.0
    # 52 cards left, 16 spades, 10 clubs, 13 and 13: Jacobson 6, the richest suit's excess 3
    assert suit_range([10, 13, 13, 16]) == 6.0
    assert suit_imbalance([10, 13, 13, 16]) == 3.0
    # one suit gone: 26 cards, 13 clubs, 13 hearts -> (13 - 0) * 52 / 26 = 26
    assert suit_range([13, 0, 13, 0]) == 26.0
    with pytest.raises(CountError, match="no card remains"):
        suit_range([0, 0, 0, 0])


def test_the_suit_counts_are_named_for_what_they_are() -> None:
    jac, ours = BUILTIN["jacobson"], BUILTIN["suit-excess"]
    assert (jac.mode, jac.label) == ("suit-range", "Jacobson's suit count")
    assert "least abundant" in jac.source
    assert ours.mode == "suit" and "not Jacobson" in ours.source
    assert "Jacobson" not in ours.label
    assert builtin_count("suit") is ours  # the name it had before, kept for command lines
    assert builtin_count("Suit_Excess") is ours


def test_unknown_count_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(CountError) as info:
        builtin_count("hilow")
    msg = str(info.value)
    assert "\n" not in msg
    for name in ("hilo", "ko", "zen", "halves", "suit-excess", "jacobson", "eor"):
        assert name in msg


def test_aliases() -> None:
    assert builtin_count("Hi-Lo") is BUILTIN["hilo"]
    assert builtin_count("wong-halves") is BUILTIN["halves"]
    assert builtin_count("omega_2") is BUILTIN["omega2"]


def test_bad_tags_are_refused() -> None:
    with pytest.raises(CountError, match="13 tags"):
        rank_count("x", [1, 2, 3])
    with pytest.raises(CountError, match="52 tags"):
        code_count("x", [0] * 51)
    with pytest.raises(CountError, match="integers"):
        rank_count("x", [0.5] * 13)  # type: ignore[list-item]


def test_code_count_tells_suits_apart() -> None:
    hearts = code_count("hearts", [1 if c % 4 == 2 else 0 for c in range(52)])
    assert hearts.rank_tags is None
    assert hearts.per_deck == 13


def test_eor_count_is_the_math_eor_integer_column() -> None:
    types = collect_wagers(get_plugin_manager())
    s7 = types["super_sevens"]()
    e = side_bet_eor(s7, 6)
    c = eor_count(s7, 6)
    assert c.rank_tags is not None
    assert all(abs(t - 2 * x) < 1 for t, x in zip(c.rank_tags, e.best_count, strict=True))
    assert c.balanced  # rounded by largest remainders: still a balanced count
    assert c.name == "eor:super_sevens"
    assert max(abs(t) for t in c.tags) == 2
    assert c.rank_tags[6] == -2  # removing a 7 hurts Super Sevens the most


def test_balanced_round_by_hand() -> None:
    # floors -2, 0, 0, 0: two to give, to the fractional parts 0.7 and 0.6
    assert balanced_round([-1.6, 0.7, 0.6, 0.3]) == (-2, 1, 1, 0)
    # round() alone would give (1, 1, -1): sum +1, off balance
    assert balanced_round([0.6, 0.6, -1.2]) == (1, 0, -1)


def test_a_wager_no_rank_moves_has_no_linear_count() -> None:
    pp = collect_wagers(get_plugin_manager())["perfect_pairs"]()
    with pytest.raises(CountError, match="same effect of removal"):
        eor_count(pp, 6)


def test_tags_given_on_the_command_line() -> None:
    from feltlab.math.counts import resolve_count, tags_count

    ten = tags_count("tags:-1,1,1,1,1,1,0,0,0,-1")  # 10 tags: J, Q, K take the ten's
    assert ten.rank_tags == BUILTIN["hilo"].rank_tags and ten.balanced
    assert ten.name == "tags -1,+1,+1,+1,+1,+1,+0,+0,+0,-1"
    assert resolve_count(" TAGS:0,1,1,1,1,1,0,0,0,-1,-1,-1,-1").rank_tags == (
        0, 1, 1, 1, 1, 1, 0, 0, 0, -1, -1, -1, -1,
    )  # fmt: skip
    for bad in ("tags:1,2", "tags:a,b", "tags:"):
        with pytest.raises(CountError, match="give 13 integer tags") as info:
            resolve_count(bad)
        assert "\n" not in str(info.value)
    with pytest.raises(CountError, match="the main wager's own count needs the rules"):
        resolve_count("eor", collect_wagers(get_plugin_manager())["main"](), 6)

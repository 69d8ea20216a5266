"""Bad arguments raise ValueError or TypeError naming the argument; nothing crashes."""

import numpy as np
import pytest

from feltlab import native
from feltlab.native._core import lib
from feltlab.native.core import check


@pytest.fixture
def rng() -> native.Xoshiro256StarStar:
    return native.Xoshiro256StarStar(1)


@pytest.mark.parametrize("decks", [0, 9, -1])
def test_decks_out_of_range(rng: native.Xoshiro256StarStar, decks: int) -> None:
    with pytest.raises(ValueError, match=r"decks must be in 1\.\.8"):
        native.shuffle_batch(rng, 1, decks=decks)
    with pytest.raises(ValueError, match=r"decks must be in 1\.\.8"):
        native.new_shoe(decks)


def test_decks_wrong_type(rng: native.Xoshiro256StarStar) -> None:
    with pytest.raises(TypeError, match="decks must be an integer"):
        native.shuffle_batch(rng, 1, decks=6.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="decks must be an integer"):
        native.new_shoe(True)


def test_negative_or_missing_n(rng: native.Xoshiro256StarStar) -> None:
    with pytest.raises(ValueError, match="n_shoes must be in"):
        native.shuffle_batch(rng, -1)
    with pytest.raises(TypeError, match="give n_shoes"):
        native.shuffle_batch(rng)
    with pytest.raises(ValueError, match="size must be in"):
        rng.random_raw(-5)


def test_wrong_dtype(rng: native.Xoshiro256StarStar) -> None:
    with pytest.raises(TypeError, match="cards must have dtype uint8 or uint16, got int64"):
        native.shuffle(np.arange(10), rng)
    with pytest.raises(TypeError, match="out must have dtype uint16"):
        native.shuffle_batch(rng, decks=1, ids=True, out=np.zeros((2, 52), np.uint8))
    with pytest.raises(TypeError, match="cards must have dtype uint8"):
        native.evaluate_hands(np.zeros((2, 2), np.int32))
    with pytest.raises(TypeError, match="cards must be a numpy array"):
        native.shuffle([1, 2, 3], rng)  # type: ignore[arg-type]


def test_non_contiguous_and_read_only(rng: native.Xoshiro256StarStar) -> None:
    base = np.zeros((4, 104), dtype=np.uint8)
    with pytest.raises(ValueError, match="out must be C-contiguous"):
        native.shuffle_batch(rng, decks=1, out=base[:, ::2])
    with pytest.raises(ValueError, match="cards must be C-contiguous"):
        native.shuffle(np.arange(20, dtype=np.uint8)[::2], rng)
    ro = np.arange(52, dtype=np.uint8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        native.shuffle(ro, rng)
    with pytest.raises(ValueError, match="cards must be C-contiguous"):
        native.evaluate_hands(np.zeros((3, 4), np.uint8)[:, ::2])


def test_wrong_shapes(rng: native.Xoshiro256StarStar) -> None:
    with pytest.raises(ValueError, match="out must have 312 columns"):
        native.shuffle_batch(rng, decks=6, out=np.zeros((2, 52), np.uint8))
    with pytest.raises(ValueError, match="disagrees"):
        native.shuffle_batch(rng, 3, decks=1, out=np.zeros((2, 52), np.uint8))
    with pytest.raises(ValueError, match="1-dimensional"):
        native.shuffle(np.zeros((2, 2), np.uint8), rng)
    with pytest.raises(ValueError, match="columns"):
        native.evaluate_hands(np.zeros((2, 0), np.uint8))


def test_wrong_generator_and_model_arguments(rng: native.Xoshiro256StarStar) -> None:
    with pytest.raises(TypeError, match=r"rng must be a feltlab\.native generator"):
        native.shuffle(np.arange(4, dtype=np.uint8), np.random.default_rng(1))  # type: ignore[arg-type]
    a = np.arange(52, dtype=np.uint8)
    with pytest.raises(ValueError, match=r"shelves must be in 1\.\.256"):
        native.shelf_shuffle(a, rng, shelves=0)
    with pytest.raises(ValueError, match="at most 4096 cards"):
        native.riffle_shuffle(np.zeros(5000, np.uint16), rng)


def test_empty_inputs_are_fine(rng: native.Xoshiro256StarStar) -> None:
    assert native.shuffle_batch(rng, 0, decks=6).shape == (0, 312)
    native.shuffle(np.zeros(0, np.uint8), rng)
    assert native.evaluate_hands(np.zeros((0, 2), np.uint8)).total.shape == (0,)


def test_the_action_codes_are_the_headers_enums() -> None:
    from feltlab.native._core import lib

    assert (native.HIT, native.STAND) == (lib.FL_ACT_HIT, lib.FL_ACT_STAND) == (0, 1)


def test_a_round_out_of_cards_has_a_status_and_a_remedy_of_its_own() -> None:
    # issue 41, the simulator's breaker: a pathological strategy (hit to 21, split every pair
    # to 4 hands, no hole card, the dealer playing out) at the deepest cut needed more than
    # the 26 cards kept behind the cutting card after 900 M rounds, and failed with the
    # generic "a size or bound was outside its domain"
    assert lib.FL_ERR_CARDS_OUT not in (lib.FL_ERR_RANGE, lib.FL_ERR_EXHAUSTED)
    with pytest.raises(native.CoreError) as err:
        check(lib.FL_ERR_CARDS_OUT, "simulate_tally")
    text = str(err.value)
    assert text.startswith("simulate_tally: a round ran out of cards")
    assert "--penetration" in text and "--fresh-shoe" in text

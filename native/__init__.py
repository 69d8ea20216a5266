"""The C core's Python facade: the only module the rest of feltlab imports from native/.

Its wrappers live in :mod:`~feltlab.native.core` (generators, shoes, shuffle models),
:mod:`~feltlab.native.stats` (battery kernels), :mod:`~feltlab.native.sim` (the round
simulator) and :mod:`~feltlab.native.hands` (hand evaluation).

Everything here is a thin, validating wrapper over ``feltlab.native._core`` (cffi, API mode).
Arrays are passed to C with ``ffi.from_buffer`` (no copies); every argument is checked first,
so a bad call raises :class:`ValueError` or :class:`TypeError` naming the argument, never a
crash of the core.

Card model (docs/design.md): a card *code* is ``rank * 4 + suit`` (uint8, 0..51; rank 0..12 =
A, 2..10, J, Q, K; suit 0..3 = clubs, diamonds, hearts, spades); a physical card in a
multi-deck shoe has the *id* ``deck * 52 + code`` (uint16).
"""

from __future__ import annotations

from feltlab.native.analyzer import Analysis, AnalyzerRules, analyze, dealer_probabilities
from feltlab.native.core import (
    CARDS_PER_DECK,
    MAX_DECKS,
    MAX_MODEL_CARDS,
    MAX_MODEL_PASSES,
    MAX_SHELVES,
    MODEL_PARAMS,
    NO_CARD,
    NO_POSITION,
    BitGenerator,
    ChaCha20,
    CoreError,
    ModelStream,
    Xoshiro256StarStar,
    batch_draw_word,
    chacha20_block,
    core_info,
    make_rng,
    new_deck_order,
    new_shoe,
    riffle_shuffle,
    shelf_shuffle,
    shuffle,
    shuffle_batch,
)
from feltlab.native.csm import CSM_KINDS, CSM_POLICIES, CsmModel, csm_stream
from feltlab.native.hands import HandValues, evaluate_hands
from feltlab.native.sim import (
    DF_CLASSES,
    DF_MAX_CARDS,
    DOUBLE_ELSE_HIT,
    DOUBLE_ELSE_STAND,
    HIT,
    NOT_OFFERED,
    RECORD_DTYPE,
    RECORD_INPUTS,
    SIDE_CARD_VALUES,
    SIDE_INPUT_VALUES,
    SIDE_MAX_INPUTS,
    SIM_INPUTS,
    SIM_LANES,
    SIM_VERSION,
    STAND,
    SideTable,
    SimResult,
    SimRules,
    TallyResult,
    dealer_final,
    simulate_rounds,
    simulate_tally,
)
from feltlab.native.stats import (
    ShoeStatistics,
    adjacent_rank_pairs,
    battery_pass,
    check_permutations,
    successive_shoe_rho,
)

RNG_NAMES = ("xoshiro256**", "chacha20")

__all__ = [
    "CARDS_PER_DECK",
    "CSM_KINDS",
    "CSM_POLICIES",
    "DF_CLASSES",
    "DF_MAX_CARDS",
    "DOUBLE_ELSE_HIT",
    "DOUBLE_ELSE_STAND",
    "HIT",
    "MAX_DECKS",
    "MAX_MODEL_CARDS",
    "MAX_MODEL_PASSES",
    "MAX_SHELVES",
    "MODEL_PARAMS",
    "NOT_OFFERED",
    "NO_CARD",
    "NO_POSITION",
    "RECORD_DTYPE",
    "RECORD_INPUTS",
    "RNG_NAMES",
    "SIDE_CARD_VALUES",
    "SIDE_INPUT_VALUES",
    "SIDE_MAX_INPUTS",
    "SIM_INPUTS",
    "SIM_LANES",
    "SIM_VERSION",
    "STAND",
    "Analysis",
    "AnalyzerRules",
    "BitGenerator",
    "ChaCha20",
    "CoreError",
    "CsmModel",
    "HandValues",
    "ModelStream",
    "ShoeStatistics",
    "SideTable",
    "SimResult",
    "SimRules",
    "TallyResult",
    "Xoshiro256StarStar",
    "adjacent_rank_pairs",
    "analyze",
    "batch_draw_word",
    "battery_pass",
    "chacha20_block",
    "check_permutations",
    "core_info",
    "csm_stream",
    "dealer_final",
    "dealer_probabilities",
    "evaluate_hands",
    "make_rng",
    "new_deck_order",
    "new_shoe",
    "riffle_shuffle",
    "shelf_shuffle",
    "shuffle",
    "shuffle_batch",
    "simulate_rounds",
    "simulate_tally",
    "successive_shoe_rho",
]

"""Validating wrappers over the continuous shuffler models of the C core (``native/src/csm.c``):
:class:`CsmModel` (a model and its parameters) and :func:`csm_stream` (the card stream of rounds
dealt from the machine and returned by the model's policy).

The models (``fl_csm_model`` in ``native/include/feltlab_core.h``; motivation: Stephen How's
model of a ShuffleMaster 126 with a buffer of at least 16 cards, issue 26):

- ``ideal``: the next card is uniform among the cards in the machine;
- ``slots``: the declared model of the bundled continuous profile
  (``rig/certify/profiles/continuous.toml``): a card entering goes to a uniformly chosen slot
  at a uniformly chosen depth, a deal takes the top card of a uniformly chosen non-empty slot.

Returned cards pass through a first-in first-out buffer of ``buffer`` cards (a card enters the
machine when ``buffer`` later cards have been returned) and go back after every round
(``policy="round"``), or every ``batch`` rounds (``policy="batch"``), in the order dealt.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.native._core import ffi, lib
from feltlab.native.core import CARDS_PER_DECK, BitGenerator, as_int, check, check_decks, rng_ptr

CSM_KINDS = {"ideal": int(lib.FL_CSM_IDEAL), "slots": int(lib.FL_CSM_SLOTS)}
"""The machine models by name: their ``FL_CSM_*`` codes."""
CSM_POLICIES = {"round": int(lib.FL_CSM_RETURN_ROUND), "batch": int(lib.FL_CSM_RETURN_BATCH)}
"""The return policies by name: their ``FL_CSM_RETURN_*`` codes."""
MAX_SLOTS = 255
CSM_MAX_BATCH = 64
CSM_ROUND_CARDS_MAX = 24
"""The cards one round of one box is taken to need at most when a model is checked (a round
that needs more than the machine holds is refused by the simulator at that round)."""


@dataclass(frozen=True)
class CsmModel:
    """A continuous shuffler: ``kind`` (``"ideal"`` or ``"slots"``), ``slots`` (1..255, the slot
    machine's slots), ``buffer`` (cards, >= 0), ``policy`` (``"round"`` or ``"batch"``) and
    ``batch`` (rounds per batch, >= 1).  Construction raises ValueError (one line, naming the
    field and its range) for a bad value; :meth:`check` the model against a deck count."""

    kind: str = "ideal"
    slots: int = 38
    buffer: int = 0
    policy: str = "round"
    batch: int = 1

    def __post_init__(self) -> None:
        if self.kind not in CSM_KINDS:
            raise ValueError(f"CSM kind must be one of {', '.join(CSM_KINDS)}, got {self.kind!r}")
        if self.policy not in CSM_POLICIES:
            raise ValueError(
                f"CSM return policy must be one of {', '.join(CSM_POLICIES)}, got {self.policy!r}"
            )
        as_int(self.slots, "slots", 1, MAX_SLOTS)
        as_int(self.buffer, "buffer", 0, 8 * CARDS_PER_DECK)
        as_int(self.batch, "batch", 1, CSM_MAX_BATCH)

    @property
    def rounds_per_return(self) -> int:
        """Rounds whose cards go back together: ``batch`` under the batch policy, else 1."""
        return self.batch if self.policy == "batch" else 1

    def check(self, decks: int, per_round: int) -> None:
        """Raise ValueError when the machine of ``decks`` decks could run out of cards with
        rounds of up to ``per_round`` cards (buffer + rounds held * per_round must stay below
        the cards loaded)."""
        d = check_decks(decks)
        cards = d * CARDS_PER_DECK
        held = self.buffer + self.rounds_per_return * per_round
        if held < cards:
            return
        if self.rounds_per_return > 1 and self.buffer + per_round < cards:  # the batch's fault
            raise ValueError(
                f"a batch of {self.batch} rounds of up to {per_round} cards held out with a "
                f"buffer of {self.buffer} cards leaves no card in a {d}-deck machine: use a "
                f"batch of at most {(cards - 1 - self.buffer) // per_round} rounds"
            )
        raise ValueError(
            f"a buffer of {self.buffer} cards and a round of up to {per_round} cards held out "
            f"leave no card in a {d}-deck machine: use a buffer below {cards - per_round}"
            + (" (with batch 1; a larger batch needs a smaller buffer)" if self.batch > 1 else "")
        )

    def max_batch(self, decks: int) -> int:
        """The largest batch the round simulator accepts for ``decks`` decks with this
        buffer (:meth:`max_buffer`'s rule solved for the batch; 0: not even one round)."""
        d = check_decks(decks)
        spare = d * CARDS_PER_DECK - CARDS_PER_DECK - self.buffer
        return 0 if spare < 0 else min(1 + spare // CSM_ROUND_CARDS_MAX, CSM_MAX_BATCH)

    def max_buffer(self, decks: int) -> int:
        """The largest buffer the round simulator accepts for ``decks`` decks: the machine
        keeps at least a deck (52 cards) beside the buffer and the full rounds of a batch held
        back (:data:`CSM_ROUND_CARDS_MAX` cards each; ``fl_csm_init``)."""
        d = check_decks(decks)
        return (
            d * CARDS_PER_DECK - CARDS_PER_DECK - (self.rounds_per_return - 1) * CSM_ROUND_CARDS_MAX
        )

    def check_table(self, decks: int) -> None:
        """Raise ValueError (one line) when the round simulator would refuse this machine for
        ``decks`` decks (:meth:`max_buffer`)."""
        top = self.max_buffer(decks)
        if self.buffer <= top:
            return
        most = self.max_batch(decks)
        if self.rounds_per_return > 1 and most >= 1:  # the buffer fits alone: the batch's fault
            raise ValueError(
                f"a batch of {self.batch} rounds (up to {CSM_ROUND_CARDS_MAX} cards each held "
                f"back) with a buffer of {self.buffer} cards leaves the {decks}-deck machine less "
                f"than a deck to deal rounds from: give a batch of at most {most} rounds"
            )
        alone = replace(self, policy="round", batch=1).max_buffer(decks)
        raise ValueError(
            f"a buffer of {self.buffer} cards leaves the {decks}-deck machine less than a "
            f"deck to deal rounds from: give a buffer of at most {max(alone, 0)} cards"
            + (" (with batch 1)" if self.rounds_per_return > 1 else "")
        )

    def c_struct(self) -> Any:
        """The model as a cffi ``fl_csm_model *`` (for the C simulator)."""
        c = ffi.new("fl_csm_model *")
        c.kind = CSM_KINDS[self.kind]
        c.slots = self.slots if self.kind == "slots" else 0
        c.buffer = self.buffer
        c.policy = CSM_POLICIES[self.policy]
        c.batch = self.batch
        return c

    def describe(self) -> str:
        """One line: ``slots machine (38 slots), buffer 16, returns after each round``."""
        machine = "ideal machine" if self.kind == "ideal" else f"slot machine ({self.slots} slots)"
        ret = (
            "returns after each round"
            if self.policy == "round"
            else f"returns every {self.batch} rounds"
        )
        return f"{machine}, buffer {self.buffer}, {ret}"


def csm_stream(
    rng: BitGenerator, model: CsmModel, decks: int, n_rounds: int, per_round: int
) -> npt.NDArray[np.uint8]:
    """The cards of ``n_rounds`` rounds of ``per_round`` cards each dealt from ``model`` loaded
    with ``decks`` decks, each round returned by the model's policy: uint8 codes, shape
    ``(n_rounds, per_round)``.  Raises ValueError for a model that could run out of cards
    (:meth:`CsmModel.check`) or a bad size, TypeError for a non-integer."""
    if not isinstance(model, CsmModel):
        raise TypeError(f"model must be a CsmModel, got {type(model).__name__}")
    n = as_int(n_rounds, "n_rounds", 0, 1 << 34)
    k = as_int(per_round, "per_round", 1, 8 * CARDS_PER_DECK)
    model.check(decks, k)
    out = np.empty((n, k), dtype=np.uint8)
    ptr = rng_ptr(rng)
    with rng.lock:
        st = lib.fl_csm_stream(
            ptr, model.c_struct(), int(decks), n, k, ffi.from_buffer("uint8_t[]", out)
        )
    check(st, "csm_stream")
    return out

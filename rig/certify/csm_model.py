"""The declared model of a continuous shuffler: a profile's ``[model]`` table read as a
:class:`feltlab.native.CsmModel`, checked once where the profile is read.

``[model]`` (docs/certification.md, docs/csm-audit.md):

- ``insert``, ``deal``: the machine.  ``"uniform-slot-uniform-depth"`` with
  ``"uniform-nonempty-slot-top"`` is the slot machine of the bundled profile (a card entering
  goes to a uniformly chosen slot of ``[device] slots`` at a uniformly chosen depth; a deal
  takes the top card of a uniformly chosen non-empty slot); ``"uniform"`` with ``"uniform"``
  is the ideal machine (every card in it equally likely next).
- ``buffer`` (cards, default 0): returned cards wait in a first-in first-out buffer and enter
  the machine when ``buffer`` later cards have been returned (Stephen How's model of the
  ShuffleMaster 126 has at least 16).
- ``policy`` (``"round"``, default, or ``"batch"``) and ``batch`` (rounds, default 1): how the
  table returns cards, after each round or every ``batch`` rounds, in the order dealt.

The simulated device (:class:`feltlab.rig.devices.shufflers.ContinuousShuffler`) has the
declared buffer unless ``[simulation] buffer`` gives it another (a device that differs from
its declaration, which the capture audit names).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from feltlab.errors import nearest_name
from feltlab.native import CARDS_PER_DECK, CSM_MAX_BATCH, CSM_ROUND_CARDS_MAX, CsmModel
from feltlab.rig.errors import ProfileError
from feltlab.rules import ANY_MIN_DECKS, MAX_DECKS

SLOT_MACHINE = ("uniform-slot-uniform-depth", "uniform-nonempty-slot-top")
"""``(insert, deal)`` of the slot machine."""
IDEAL_MACHINE = ("uniform", "uniform")
"""``(insert, deal)`` of the ideal machine."""
MODEL_KEYS = ("insert", "deal", "buffer", "policy", "batch")
"""The keys of ``[model]``."""


def _int(where: str, key: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProfileError(
            f"{where}: [model] {key} = {value!r} must be an integer: give one in [{lo}, {hi}] "
            "(no quotes)"
        )
    if not lo <= value <= hi:
        raise ProfileError(
            f"{where}: [model] {key} = {value!r} is out of range: give an integer in [{lo}, {hi}]"
        )
    return value


def declared_model(where: str, model: Mapping[str, Any], device: Mapping[str, Any]) -> CsmModel:
    """The :class:`CsmModel` a profile's ``[model]`` table declares (``device``: its
    ``[device]`` table, for ``decks`` and ``slots``).  Raises :class:`ProfileError` (one line
    naming the key, the value and what to give) for an unknown key or a bad value, and for a
    buffer that could leave the machine without a card."""
    for key in model:
        if key not in MODEL_KEYS:
            near = nearest_name(str(key), MODEL_KEYS)
            hint = f"did you mean {near!r}? " if near else ""
            raise ProfileError(
                f"{where}: unknown key {key!r} in [model]; {hint}known: {', '.join(MODEL_KEYS)}"
            )
    pair = (model.get("insert", SLOT_MACHINE[0]), model.get("deal", SLOT_MACHINE[1]))
    if pair not in (SLOT_MACHINE, IDEAL_MACHINE):
        raise ProfileError(
            f"{where}: [model] insert = {pair[0]!r}, deal = {pair[1]!r} is no known machine: give "
            f"insert = {SLOT_MACHINE[0]!r}, deal = {SLOT_MACHINE[1]!r} (the slot machine) or "
            'insert = "uniform", deal = "uniform" (the ideal machine)'
        )
    decks = device.get("decks", 6)
    cards = (
        decks if isinstance(decks, int) and ANY_MIN_DECKS <= decks <= MAX_DECKS else 6
    ) * CARDS_PER_DECK
    policy = model.get("policy", "round")
    if policy not in ("round", "batch"):
        raise ProfileError(
            f'{where}: [model] policy = {policy!r} is unknown: give "round" (cards back after '
            'each round) or "batch" (every `batch` rounds)'
        )
    # CsmModel.max_batch: the batch's full rounds held back beside a deck, with no buffer
    most = (
        1 + (cards - CARDS_PER_DECK) // CSM_ROUND_CARDS_MAX if policy == "batch" else CSM_MAX_BATCH
    )
    batch = _int(where, "batch", model.get("batch", 1), 1, min(most, CSM_MAX_BATCH))
    rack = batch - 1 if policy == "batch" else 0
    top = cards - CARDS_PER_DECK - rack * CSM_ROUND_CARDS_MAX  # CsmModel.max_buffer
    buffer = _int(where, "buffer", model.get("buffer", 0), 0, max(top, 0))
    slots = device.get("slots", 38)
    return CsmModel(
        "slots" if pair == SLOT_MACHINE else "ideal",
        slots=slots if isinstance(slots, int) and 1 <= slots <= 255 else 38,
        buffer=buffer,
        policy=str(policy),
        batch=batch,
    )


def check_model_table(where: str, data: Mapping[str, Any]) -> None:
    """Refuse a bad ``[model]`` table of a parsed profile (:func:`declared_model`), and a
    ``[simulation] buffer`` outside the same range.  Raises :class:`ProfileError`."""
    model = data.get("model")
    dev = data.get("device")
    device = dev if isinstance(dev, Mapping) else {}
    if model is None:
        model = {}
    if not isinstance(model, Mapping):
        raise ProfileError(f"{where}: [model] must be a table, got {model!r}")
    declared_model(where, model, device)
    sim = data.get("simulation")
    if isinstance(sim, Mapping) and "buffer" in sim:
        try:
            declared_model(where, {**model, "buffer": sim["buffer"]}, device)
        except ProfileError as exc:
            raise ProfileError(str(exc).replace("[model] buffer", "[simulation] buffer")) from None


def profile_model(profile_raw: Mapping[str, Any], where: str = "profile") -> CsmModel:
    """The declared :class:`CsmModel` of a parsed continuous profile (``[model]`` and
    ``[device]``); the defaults (no ``[model]``) are the bundled profile's slot machine with
    no buffer, returned after each round."""
    model = profile_raw.get("model") or {}
    dev = profile_raw.get("device") or {}
    return declared_model(where, model, dev)

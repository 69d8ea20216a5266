"""Shuffle models of the simulated batch shuffler, by name: the library of flawed machines.

A model permutes an index array (uint16, position 0 is the top card): the device applies the
result to its cards, so models never need to know card codes or deck indexes.  Every model
runs in the C core (``feltlab.native.ModelStream``, native/src/models.c), one shoe or a batch
of shoes per call.  The mechanisms and sources are in docs/certification.md ("The library of
shuffle models") and in models.c.

Grammar (``parse_model``): ``KIND[:KEY=INT[,KEY=INT...]]``.  Values are integers (Python
``int(v, 0)``: ``0x10`` is allowed); every key is optional (its default below); a
probability is given in **percent** (0..100).  Keys depend on the kind:

=================  ==============================================  ========================
kind               keys (default, range)                           faulty (a defect)
=================  ==============================================  ========================
``fisher-yates``   none (aliases ``fy``, ``fisher_yates``)          no: exactly uniform
``riffle``         ``k`` GSR riffles (7, 0..64)                     no: a mixing model
``shelf``          ``m`` shelves (10, 1..256), ``passes`` (1, 1..64) no: a mixing model
``overhand``       ``passes`` (1, 0..65536), ``cut`` % a gap (20)   no: a mixing model
``strip``          ``cuts`` (4, 0..415; < n), ``passes`` (1, 0..65536) no: a mixing model
``position-bias``  ``pos`` (0, < n), ``stay`` % (10), ``width`` (0)  yes
``naive``          none (alias ``biased``: the kind is ``naive``)   yes
``modulo``         ``bits`` of the generator (15, 1..32)            yes
``lcg``            ``shift`` (0, 0..30)                             yes
``short-seed``     ``bits`` of the seed (16, 1..64)                 yes
``reboot``         ``every`` shoes (100, 1..2^32-1)                 yes
``stuck``          ``pos`` (0, < n)                                 yes
``missing``        ``pos`` (0, < n)                                 yes
``duplicate``      ``pos`` (0, < n)                                 yes
=================  ==============================================  ========================

``n`` is the shoe's card count (at most 8 decks, 416 cards: a ``pos`` or ``cuts`` beyond
``n - 1`` is refused when the shoe is shuffled).  Mechanisms, in one line each:

- ``riffle:k=N``: N Gilbert-Shannon-Reeds riffles (Bayer and Diaconis 1992).
- ``shelf:m=N,passes=P``: the Diaconis-Fulman-Holmes (2013) shelf shuffler, P passes.
- ``overhand:passes=P,cut=C``: Pemantle's (1989) overhand shuffle: each of the n-1 gaps is a
  cut with probability C %, the packets are then laid down in reverse order; P times.
- ``strip:cuts=C,passes=P``: the strip (running cuts): C distinct gaps chosen uniformly, the
  C+1 packets laid down in reverse order (the top packet ends at the bottom); P times.
- ``position-bias:pos=P,stay=S,width=W``: a Fisher-Yates shoe, then with probability S % the
  card loaded at position P is swapped to a uniform position within W of P (clipped to the
  shoe): that card tends to stay near its place.  ``stay=100,width=0`` is ``stuck``.
- ``naive`` (``biased``): for i = 0..n-1 swap a[i] with a[j], j uniform on 0..n-1 (n^n paths
  over n! orders).
- ``modulo:bits=B``: Durstenfeld's Fisher-Yates (i = n-1 down to 1, swap a[i] and a[j]) with
  j = r % (i+1), r a uniform B-bit integer (``rand() % (i+1)`` with RAND_MAX = 2^B - 1):
  modulo bias.
- ``lcg:shift=S``: the same loop with r = x >> S, x the 31-bit state of the glibc TYPE_0
  generator x' = (1103515245 x + 12345) mod 2^31 (``rand()`` returns x itself: S = 0, its
  low bits have short periods, bit 0 alternates); S = 16 is the ANSI C example ``rand()``
  ((x / 65536) % 32768).  One generator per device: its state carries across shoes.
- ``short-seed:bits=S``: each shoe is a Fisher-Yates shuffle by xoshiro256** seeded with an
  S-bit seed drawn from the device's generator: at most 2^S distinct shoes, so shoes repeat.
- ``reboot:every=N``: Fisher-Yates from a generator seeded once at power-up, and the device
  reboots every N shoes, reseeding with the same seed: shoe k equals shoe k mod N.
- ``stuck:pos=P``: the card loaded at P never moves; the others are a Fisher-Yates shuffle.
- ``missing:pos=P``: a Fisher-Yates shoe loses the card at position P (n - 1 cards; in a
  batch the last column holds ``native.NO_POSITION``).
- ``duplicate:pos=P``: a Fisher-Yates shoe where another position repeats the card at P.

Stateful models (``lcg``, ``reboot``) keep their device state in a ``native.ModelStream``;
the simulated device holds one stream for its life.  ``simulate_shoes(model, n_shoes,
n_cards, seed)`` (feltlab.rig.certify.simulate) draws one stream from
``Xoshiro256StarStar(seed)``: ``lcg`` takes its initial state from that generator's first
word (the low 31 bits), ``reboot`` seeds its power-up generator from the first word.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.rig.errors import ModelError
from feltlab.rules import MAX_DECKS

Order = npt.NDArray[np.uint16]

MAX_CARDS = MAX_DECKS * 52
"""The most cards in a shoe (8 decks): a model's ``pos`` lies in ``0..MAX_CARDS - 1``."""


class ModelKind(StrEnum):
    """The shuffle models of the library, in the C core's order (native/src/models.c,
    ``feltlab.native.MODEL_PARAMS``): a ``str``, so a kind compares and writes to JSON as its
    name."""

    FISHER_YATES = "fisher-yates"
    RIFFLE = "riffle"
    SHELF = "shelf"
    OVERHAND = "overhand"
    STRIP = "strip"
    POSITION_BIAS = "position-bias"
    NAIVE = "naive"
    MODULO = "modulo"
    LCG = "lcg"
    SHORT_SEED = "short-seed"
    REBOOT = "reboot"
    STUCK = "stuck"
    MISSING = "missing"
    DUPLICATE = "duplicate"


@dataclass(frozen=True)
class Param:
    """One parameter of a model kind: its key, default and integer range (inclusive)."""

    key: str
    default: int
    lo: int
    hi: int
    unit: str = ""


def _pos() -> Param:
    return Param("pos", 0, 0, MAX_CARDS - 1, "a card position")


_KINDS: dict[ModelKind, tuple[tuple[Param, ...], bool]] = {
    ModelKind.FISHER_YATES: ((), False),
    ModelKind.RIFFLE: ((Param("k", 7, 0, 64, "GSR riffles"),), False),
    ModelKind.SHELF: ((Param("m", 10, 1, 256, "shelves"), Param("passes", 1, 1, 64)), False),
    ModelKind.OVERHAND: (
        (Param("passes", 1, 0, native.MAX_MODEL_PASSES), Param("cut", 20, 0, 100, "percent")),
        False,
    ),
    ModelKind.STRIP: (
        (Param("cuts", 4, 0, MAX_CARDS - 1), Param("passes", 1, 0, native.MAX_MODEL_PASSES)),
        False,
    ),
    ModelKind.POSITION_BIAS: (
        (_pos(), Param("stay", 10, 0, 100, "percent"), Param("width", 0, 0, MAX_CARDS - 1)),
        True,
    ),
    ModelKind.NAIVE: ((), True),
    ModelKind.MODULO: ((Param("bits", 15, 1, 32, "bits of the generator"),), True),
    ModelKind.LCG: ((Param("shift", 0, 0, 30, "bits dropped from the state"),), True),
    ModelKind.SHORT_SEED: ((Param("bits", 16, 1, 64, "bits of the seed"),), True),
    ModelKind.REBOOT: ((Param("every", 100, 1, (1 << 32) - 1, "shoes"),), True),
    ModelKind.STUCK: ((_pos(),), True),
    ModelKind.MISSING: ((_pos(),), True),
    ModelKind.DUPLICATE: ((_pos(),), True),
}
MODEL_NAMES: tuple[str, ...] = tuple(k.value for k in _KINDS)
"""The model kinds (``parse_model`` also takes the aliases of :data:`ALIASES`)."""

ALIASES = {
    "biased": ModelKind.NAIVE,
    "fy": ModelKind.FISHER_YATES,
    "fisher_yates": ModelKind.FISHER_YATES,
}
"""Other names of a kind: ``biased`` is the naive swap shuffle's historical name."""

STATEFUL = frozenset({ModelKind.LCG, ModelKind.REBOOT})
"""Kinds whose device state carries across shoes (a :class:`native.ModelStream` holds it)."""

MIXING = frozenset({ModelKind.RIFFLE, ModelKind.SHELF, ModelKind.OVERHAND, ModelKind.STRIP})
"""Kinds that model real shuffling machines or hand shuffles: not defects, but close to
uniform only with enough passes (``faulty`` is False, ``uniform`` too)."""


@dataclass(frozen=True)
class ShuffleModel:
    """A named shuffle model of the library (the module's docstring gives the grammar).

    ``params``: the parameters given in the name (``settings`` adds the defaults);
    ``faulty``: a defect (broken machine or flawed code) that must fail certification;
    ``uniform``: the model's law is exactly uniform over the shoe's orders (only
    Fisher-Yates).  ``apply`` shuffles one shoe; ``stream`` gives the C core's stream that
    keeps a device's state across shoes (:data:`STATEFUL` kinds need one stream per device).
    """

    name: str
    kind: ModelKind
    params: tuple[tuple[str, int], ...] = ()
    faulty: bool = False

    def param(self, key: str, default: int) -> int:
        return dict(self.params).get(key, default)

    @property
    def settings(self) -> dict[str, int]:
        """Every parameter of the kind, given or default, in the C core's order."""
        given = dict(self.params)
        return {p.key: given.get(p.key, p.default) for p in _KINDS[self.kind][0]}

    @property
    def uniform(self) -> bool:
        """True when the law is exactly uniform (the null of the battery): Fisher-Yates."""
        return self.kind == ModelKind.FISHER_YATES

    def check_fits(self, n_cards: int) -> None:
        """Raise :class:`ModelError` naming the parameter when this model cannot shuffle a
        shoe of ``n_cards`` cards (a ``pos`` beyond the shoe, as many ``cuts`` as cards):
        checked before a device starts or a campaign names it, not at its first shoe."""
        s = self.settings
        if "pos" in s and not 0 <= s["pos"] < n_cards:
            raise ModelError(
                f"model {self.name}: pos={s['pos']} is not a card of a {n_cards}-card shoe: "
                f"give pos in 0..{n_cards - 1}"
            )
        if "cuts" in s and not s["cuts"] < n_cards:
            raise ModelError(
                f"model {self.name}: cuts={s['cuts']} needs more than {n_cards} cards: give "
                f"cuts in 0..{n_cards - 1}"
            )

    def stream(self) -> native.ModelStream:
        """A fresh C-core stream of this model (state as at power-up)."""
        return native.ModelStream(self.kind, self.settings)

    def apply(
        self, order: Order, rng: native.BitGenerator, stream: native.ModelStream | None = None
    ) -> Order:
        """Shuffle ``order`` (uint16 indexes, top card first) with ``rng`` (ChaCha20 for a
        certified device): a new array (``missing`` returns one card fewer).  ``stream``: the
        device's stream (default: a fresh one, so a stateful model starts from power-up).
        Raises ModelError if the model cannot shuffle this many cards (a ``pos`` beyond)."""
        cards = np.ascontiguousarray(order, dtype=np.uint16)
        try:
            perm = (stream or self.stream()).shoe(rng, cards.size)
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        return cards[perm]


def parse_model(text: str) -> ShuffleModel:
    """A :class:`ShuffleModel` from its name, e.g. ``riffle:k=7``, ``shelf:m=10,passes=2``,
    ``lcg:shift=16`` (grammar and ranges: the module's docstring).

    Raises :class:`ModelError` (a ValueError) naming the known models for an unknown name, or
    the parameter and its range for a bad one.
    """
    if not isinstance(text, str):
        raise ModelError(f"a shuffle model is a name such as 'riffle:k=7', got {text!r}")
    name, _, rest = text.strip().partition(":")
    name = name.strip().lower()
    try:
        kind = ALIASES.get(name) or ModelKind(name)
    except ValueError:
        raise ModelError(
            f"unknown shuffle model {text!r}; choose one of {', '.join(MODEL_NAMES)} "
            f"(or {', '.join(ALIASES)})"
        ) from None
    spec, faulty = _KINDS[kind]
    allowed = {p.key: p for p in spec}
    params: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = (x.strip() for x in part.partition("="))
        if not eq or key not in allowed:
            raise ModelError(
                f"model {text!r}: bad parameter {part!r}; {kind} takes "
                f"{', '.join(k + '=N' for k in allowed) or 'no parameters'}"
            )
        if key in params:
            raise ModelError(f"model {text!r}: {key} is given twice; give it once")
        try:
            if not value.isascii():
                raise ValueError(value)
            params[key] = int(value, 0)
        except ValueError as exc:
            raise ModelError(f"model {text!r}: {key} must be an integer") from exc
        p = allowed[key]
        if not p.lo <= params[key] <= p.hi:
            if key == "pos":
                raise ModelError(
                    f"model {text!r}: pos={params[key]} is not a card position: give pos in "
                    f"0..{MAX_CARDS - 1} (a shoe holds at most 8 decks)"
                )
            unit = f" ({p.unit})" if p.unit else ""
            raise ModelError(f"{kind}:{key} must be in {p.lo}..{p.hi}{unit}, got {params[key]}")
    return ShuffleModel(text.strip(), kind, tuple(sorted(params.items())), faulty)


def grammar() -> str:
    """One line per kind: ``kind[:key=default,...]`` with ranges, for help texts."""
    out = []
    for kind, (spec, faulty) in _KINDS.items():
        keys = ",".join(f"{p.key}={p.default}" for p in spec)
        out.append(f"{kind}{':' + keys if keys else ''}{' (faulty)' if faulty else ''}")
    return "; ".join(out)


def describe(model: ShuffleModel) -> dict[str, Any]:
    """The model as a JSON-ready dict (name, kind, parameters, faulty)."""
    return {
        "name": model.name,
        "kind": model.kind,
        "params": dict(model.params),
        "faulty": model.faulty,
    }

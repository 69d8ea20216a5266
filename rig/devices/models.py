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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.rig.errors import ModelError

Order = npt.NDArray[np.uint16]


def _randbelow(rng: native.BitGenerator, bound: int, size: int = 1) -> npt.NDArray[np.uint64]:
    return rng.integers(bound, size)


def riffle(cards: Order, rng: native.BitGenerator, passes: int) -> None:
    """``passes`` GSR riffles in place (Bayer and Diaconis 1992): the C core's
    ``native.riffle_shuffle`` when present, else the numpy fallback below."""
    fn: Callable[..., None] | None = getattr(native, "riffle_shuffle", None)
    if fn is not None:
        fn(cards, rng, passes)
        return
    n = cards.size
    for _ in range(passes):  # pragma: no cover - used only with an older core
        words = rng.random_raw((n + 63) // 64)
        cut = int(np.unpackbits(words.view(np.uint8))[:n].sum())  # Binomial(n, 1/2)
        mask = np.zeros(n, dtype=np.uint8)
        mask[:cut] = 1
        native.shuffle(mask, rng)  # every interleaving equally likely
        out = np.empty_like(cards)
        out[mask == 1] = cards[:cut]
        out[mask == 0] = cards[cut:]
        cards[:] = out


def shelf(cards: Order, rng: native.BitGenerator, shelves: int, passes: int = 1) -> None:
    """``passes`` passes through a ``shelves``-shelf machine in place (Diaconis, Fulman and
    Holmes 2013): ``native.shelf_shuffle`` when present, else the numpy fallback."""
    fn: Callable[..., None] | None = getattr(native, "shelf_shuffle", None)
    if fn is not None:
        fn(cards, rng, shelves, passes)
        return
    n = cards.size
    for _ in range(passes):  # pragma: no cover - used only with an older core
        which = rng.integers(shelves, n)
        side = rng.integers(2, n)
        piles: list[list[int]] = [[] for _ in range(shelves)]
        tops: list[list[int]] = [[] for _ in range(shelves)]
        for i in range(n):
            s = int(which[i])
            (tops[s] if side[i] else piles[s]).append(int(cards[i]))
        order: list[int] = []
        for s in range(shelves):
            order.extend(reversed(tops[s]))
            order.extend(piles[s])
        cards[:] = np.asarray(order, dtype=cards.dtype)


@dataclass(frozen=True)
class ShuffleModel:
    """A named shuffle model: ``apply(order, rng)`` returns the shuffled index array (a new
    array; faulty models may return one card fewer).  ``faulty`` is True for models that
    must fail certification."""

    name: str
    kind: str
    params: tuple[tuple[str, int], ...] = ()
    faulty: bool = False

    def param(self, key: str, default: int) -> int:
        return dict(self.params).get(key, default)

    def apply(self, order: Order, rng: native.BitGenerator) -> Order:
        """Shuffle ``order`` (uint16 indexes, top card first) with ``rng`` (ChaCha20 for a
        certified device).  Raises ModelError if the model needs more cards than given."""
        out = np.ascontiguousarray(order, dtype=np.uint16).copy()
        n = out.size
        k = self.kind
        if k == "fisher-yates":
            native.shuffle(out, rng)
        elif k == "riffle":
            riffle(out, rng, self.param("k", 7))
        elif k == "shelf":
            shelf(out, rng, self.param("m", 10), self.param("passes", 1))
        elif k == "stuck":
            pos = self._pos(n)
            rest = np.delete(out, pos)
            native.shuffle(rest, rng)
            out = np.insert(rest, pos, out[pos]).astype(np.uint16)
        elif k == "missing":
            native.shuffle(out, rng)
            out = np.delete(out, self._pos(n)).astype(np.uint16)
        elif k == "duplicate":
            native.shuffle(out, rng)
            pos = self._pos(n)
            other = (pos + 1 + int(_randbelow(rng, n - 1)[0])) % n
            out[other] = out[pos]
        elif k == "biased":
            # the classic naive shuffle: swap each position with any position (n^n paths
            # over n! orders, so some orders are more likely than others)
            js = _randbelow(rng, n, n)
            for i in range(n):
                j = int(js[i])
                out[i], out[j] = out[j], out[i]
        else:  # pragma: no cover - parse_model rejects unknown kinds
            raise ModelError(f"unknown model kind {k!r}")
        return out

    def _pos(self, n: int) -> int:
        pos = self.param("pos", 0)
        if not 0 <= pos < n:
            raise ModelError(f"model {self.name}: pos={pos} outside 0..{n - 1}")
        return pos


_KINDS: dict[str, tuple[tuple[str, ...], bool]] = {
    "fisher-yates": ((), False),
    "riffle": (("k",), False),
    "shelf": (("m", "passes"), False),
    "stuck": (("pos",), True),
    "missing": (("pos",), True),
    "duplicate": (("pos",), True),
    "biased": ((), True),
}
MODEL_NAMES = tuple(_KINDS)


MAX_CARDS = 8 * 52
"""The most cards in a shoe (8 decks): a model's ``pos`` lies in ``0..MAX_CARDS - 1``."""


def parse_model(text: str) -> ShuffleModel:
    """A :class:`ShuffleModel` from its name, e.g. ``riffle:k=7`` or ``shelf:m=10,passes=2``.

    Raises :class:`ModelError` naming the known models for an unknown name or parameter.
    """
    kind, _, rest = text.strip().partition(":")
    kind = kind.lower()
    if kind in ("fy", "fisher_yates"):
        kind = "fisher-yates"
    if kind not in _KINDS:
        raise ModelError(f"unknown shuffle model {text!r}; choose one of {', '.join(MODEL_NAMES)}")
    allowed, faulty = _KINDS[kind]
    params: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or key not in allowed:
            raise ModelError(
                f"model {text!r}: bad parameter {part!r}; {kind} takes "
                f"{', '.join(k + '=N' for k in allowed) or 'no parameters'}"
            )
        try:
            params[key] = int(value, 0)
        except ValueError as exc:
            raise ModelError(f"model {text!r}: {key} must be an integer") from exc
    if "pos" in params and not 0 <= params["pos"] < MAX_CARDS:
        raise ModelError(
            f"model {text!r}: pos={params['pos']} is not a card position: give pos in "
            f"0..{MAX_CARDS - 1} (a shoe holds at most 8 decks)"
        )
    if kind == "riffle" and not 0 <= params.get("k", 7) <= 64:
        raise ModelError("riffle:k must be in 0..64")
    if kind == "shelf" and not 1 <= params.get("m", 10) <= 256:
        raise ModelError("shelf:m must be in 1..256")
    if kind == "shelf" and not 1 <= params.get("passes", 1) <= 64:
        raise ModelError("shelf passes must be in 1..64")
    return ShuffleModel(text.strip(), kind, tuple(sorted(params.items())), faulty)


def describe(model: ShuffleModel) -> dict[str, Any]:
    """The model as a JSON-ready dict (name, kind, parameters, faulty)."""
    return {
        "name": model.name,
        "kind": model.kind,
        "params": dict(model.params),
        "faulty": model.faulty,
    }

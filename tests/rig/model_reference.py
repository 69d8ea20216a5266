"""Pure-Python references of the C core's shuffle models (native/src/models.c), word for word:
driven by the same 64-bit words a generator gives, each reproduces the core's shoes exactly,
so a test can compare the two over whole batches; and each mechanism on its own, so a test can
enumerate its exact law on a small deck.  Written from the mechanisms' definitions (the
docstring of feltlab.rig.devices.models), not from the C text."""

from __future__ import annotations

from collections.abc import Callable, Iterator

MASK64 = (1 << 64) - 1
LCG_A, LCG_C, LCG_MASK = 1103515245, 12345, (1 << 31) - 1
"""glibc TYPE_0 random_r and the ANSI C (X3.159-1989 4.10.2.2) example rand()."""


class Words:
    """The 64-bit words of a generator, with the core's bit buffer: ``bits(k)`` takes k bits
    from the low end of the current word, dropping a word's leftover bits too few for k;
    ``below(bound)`` is Lemire's draw (D. Lemire, ACM TOMACS 29(1), 2019): one word a try,
    rejected when the low half of ``word * bound`` is below ``2^64 mod bound``."""

    def __init__(self, words: Iterator[int]) -> None:
        self._words = words
        self._bits = 0
        self._nbits = 0

    def new_shoe(self) -> None:
        """The core starts each shoe with an empty bit buffer (a word's unused bits go)."""
        self._bits = self._nbits = 0

    def word(self) -> int:
        return next(self._words)

    def bits(self, k: int) -> int:
        if self._nbits < k:
            self._bits, self._nbits = self.word(), 64
        v = self._bits & ((1 << k) - 1)
        self._bits >>= k
        self._nbits -= k
        return v

    def digits(self, base: int, k: int) -> list[int]:
        """k uniform digits in 0..base-1 from one word (the batched draw of Brackett-Rozinsky
        and Lemire 2025, k equal ranges): the high words of successive multiplications,
        the word rejected when the last low word is below 2^64 mod base^k."""
        while True:
            r, out = self.word(), []
            for _ in range(k):
                m = r * base
                out.append(m >> 64)
                r = m & MASK64
            if r >= (1 << 64) % base**k:
                return out

    def below(self, bound: int) -> int:
        while True:
            m = self.word() * bound
            hi, lo = m >> 64, m & MASK64
            if not (lo < bound and lo < (1 << 64) % bound):
                return hi


def riffle_labels(a: list[int], labels: list[int]) -> list[int]:
    """One 2^k-shuffle: output position i takes the next card of the packet ``labels[i]``;
    the packets are ``a``'s consecutive blocks, of the sizes the labels count (Bayer and
    Diaconis 1992)."""
    start = [0] * (max(labels, default=0) + 2)
    for lab in labels:
        start[lab + 1] += 1
    for d in range(1, len(start)):
        start[d] += start[d - 1]
    out = []
    for lab in labels:
        out.append(a[start[lab]])
        start[lab] += 1
    return out


def riffle(w: Words, n: int, k: int) -> list[int]:
    w.new_shoe()
    a, left = list(range(n)), k
    while left:
        kk = min(left, 8)
        a = riffle_labels(a, [w.bits(kk) for _ in range(n)])
        left -= kk
    return a


def shelf_layout(a: list[int], shelf: list[int], top: list[int], m: int) -> list[int]:
    """Each card in turn on its shelf, on top (``top``) or under; shelves unload in order."""
    piles: list[list[int]] = [[] for _ in range(m)]
    for card, s, t in zip(a, shelf, top, strict=True):
        if t:
            piles[s].insert(0, card)
        else:
            piles[s].append(card)
    return [c for p in piles for c in p]


def shelf(w: Words, n: int, m: int, passes: int) -> list[int]:
    """Each card's digit d uniform on 0..2m-1 (shelf d // 2, on top when d is odd), k digits
    a word: the largest k with (2m)^k < 2^64."""
    base, k = 2 * m, 1
    while base ** (k + 1) < 1 << 64:
        k += 1
    a = list(range(n))
    for _ in range(passes):
        d: list[int] = []
        while len(d) < n:
            d.extend(w.digits(base, k))
        a = shelf_layout(a, [x // 2 for x in d[:n]], [x % 2 for x in d[:n]], m)
    return a


def reverse_packets(a: list[int], cut: list[bool]) -> list[int]:
    """The packets of ``a`` (a cut after position g when ``cut[g]``) laid down in reverse
    order, each keeping its own order."""
    packets, cur = [], [a[0]] if a else []
    for g in range(len(a) - 1):
        if cut[g]:
            packets.append(cur)
            cur = []
        cur.append(a[g + 1])
    if cur:
        packets.append(cur)
    return [c for p in reversed(packets) for c in p]


def percent_draws(w: Words, count: int, percent: int) -> list[bool]:
    """``count`` independent events of probability percent/100: the nine base-100 digits,
    lowest first, of each uniform draw below 100^9."""
    out: list[bool] = []
    while len(out) < count:
        u = w.below(100**9)
        for _ in range(min(9, count - len(out))):
            out.append(u % 100 < percent)
            u //= 100
    return out


def overhand(w: Words, n: int, passes: int, percent: int) -> list[int]:
    a = list(range(n))
    for _ in range(passes if n > 1 else 0):
        a = reverse_packets(a, percent_draws(w, n - 1, percent))
    return a


def strip(w: Words, n: int, cuts: int, passes: int) -> list[int]:
    a = list(range(n))
    for _ in range(passes):
        gap = list(range(n - 1))
        cut = [False] * max(n - 1, 0)
        for i in range(cuts):
            j = i + w.below(n - 1 - i)
            gap[i], gap[j] = gap[j], gap[i]
            cut[gap[i]] = True
        a = reverse_packets(a, cut)
    return a


def naive(w: Words, n: int) -> list[int]:
    a = list(range(n))
    for i in range(n):
        j = w.below(n)
        a[i], a[j] = a[j], a[i]
    return a


def durstenfeld(n: int, draw: Callable[[int], int]) -> list[int]:
    """i = n-1 down to 1: swap a[i] and a[draw(i)] (draw(i) in 0..i for a fair shuffle)."""
    a = list(range(n))
    for i in range(n - 1, 0, -1):
        j = draw(i)
        a[i], a[j] = a[j], a[i]
    return a


def modulo(w: Words, n: int, bits: int) -> list[int]:
    return durstenfeld(n, lambda i: (w.word() >> (64 - bits)) % (i + 1))


class Lcg:
    """x' = (1103515245 x + 12345) mod 2^31; ``rand()`` returns ``x >> shift``."""

    def __init__(self, state: int, shift: int) -> None:
        self.x, self.shift = state & LCG_MASK, shift

    def rand(self) -> int:
        self.x = (LCG_A * self.x + LCG_C) & LCG_MASK
        return self.x >> self.shift

    def shoe(self, n: int) -> list[int]:
        return durstenfeld(n, lambda i: self.rand() % (i + 1))

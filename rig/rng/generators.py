"""The library of flawed generators: named models of real generators' raw output, each with
its source and, where one is computable, its law (docs/rng.md, "The library of generators").

A generator is named like a shuffle model, ``NAME[:key=value,...]`` (:func:`parse_generator`),
and gives ``m`` sequences of ``n`` bits (:meth:`Generator.sequences`): ``np.uint8``
``(m, ceil(n / 8))``, most significant bit first, the form :func:`feltlab.rig.rng.sp800_22
.run_battery` and :func:`feltlab.rig.rng.sources.read_bitstream` use.  The sequences are
consecutive pieces of one stream from the seed (sequence ``i`` is bits ``i n .. (i+1) n - 1``),
as a collection tool writes them, except ``reused-key`` (one stream a sequence, its point).

Each is vectorised in numpy: the linear congruential generators run 2^14 lanes of their one
stream at once, each lane started by the LCG's affine jump-ahead; xorshift128+'s lanes are
started by its GF(2) jump matrix; the ChaCha20 stream is the C core's (``feltlab.native
.ChaCha20``, RFC 8439), about 160 MB/s.

Which no bitstream test can catch: a generator that is statistically good but predictable.
``mt19937`` (the Mersenne Twister) passes SP 800-22, yet 624 consecutive outputs give its
whole state (its tempering is invertible), after which every output is known: that is
unpredictability (25 CFR 547.14(c), 58 Pa. Code 810a.5(a)(4)), which no test of the bits'
distribution sees (issue 40).  ``xorshift128+`` passes SP 800-22 on its 64-bit outputs (its
weakness is its lowest bits, ``xorshift128+-low``) and is as predictable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.rig.errors import ModelError
from feltlab.rig.rng.sources import pack_values, split_sequences

LANES = 1 << 14
"""Lanes of one stream computed at once (each started by a jump ahead)."""

_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class Param:
    """A generator's integer parameter: its key, default and inclusive range."""

    key: str
    default: int
    lo: int
    hi: int
    help: str


Maker = Callable[[dict[str, int], int, int], npt.NDArray[np.uint8]]
"""``(params, total_bits, seed) -> packed stream`` of at least ``total_bits`` bits."""


@dataclass(frozen=True)
class GeneratorSpec:
    """A generator of the library: ``name``, what it is (``title``), where it comes from
    (``source``), its flaw and the law of its output (``law``), whether a bitstream test can
    catch it at all (``catchable``) and whether its sequences are independent pieces of
    one long stream (``independent``: False when sequences repeat each other)."""

    name: str
    title: str
    source: str
    law: str
    params: tuple[Param, ...] = ()
    catchable: bool = True
    independent: bool = True
    fair: bool = False
    make: Maker | None = None
    per_sequence: Callable[[dict[str, int], int, int, int], npt.NDArray[np.uint8]] | None = None


@dataclass(frozen=True)
class Generator:
    """A generator of the library with its parameters (from :func:`parse_generator`)."""

    spec: GeneratorSpec
    params: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The canonical name, parameters that differ from the defaults included."""
        extra = [
            f"{p.key}={self.params[p.key]}"
            for p in self.spec.params
            if self.params[p.key] != p.default
        ]
        return self.spec.name + (":" + ",".join(extra) if extra else "")

    def sequences(self, m: int, n_bits: int, seed: int) -> npt.NDArray[np.uint8]:
        """``m`` sequences of ``n_bits`` bits from ``seed`` (0..2^64-1): ``np.uint8``
        ``(m, ceil(n_bits / 8))``, MSB first.  ValueError for m or n_bits below 1."""
        if m < 1 or n_bits < 1:
            raise ValueError(f"need m >= 1 and n_bits >= 1, got m={m}, n_bits={n_bits}")
        if self.spec.per_sequence is not None:
            return self.spec.per_sequence(self.params, m, n_bits, seed)
        assert self.spec.make is not None
        return split_sequences(self.spec.make(self.params, m * n_bits, seed), m, n_bits)

    def describe(self) -> dict[str, Any]:
        """The record's description: name, title, source, law, parameters."""
        s = self.spec
        return {
            "name": self.name,
            "title": s.title,
            "source": s.source,
            "law": s.law,
            "params": dict(self.params),
            "catchable_by_bitstream_tests": s.catchable,
        }


# -- linear congruential generators -----------------------------------------------------


def _affine_power(a: int, c: int, k: int, mod: int) -> tuple[int, int]:
    """``(A, C)`` with x_{j+k} = A x_j + C (mod ``mod``) for x_{j+1} = a x_j + c."""
    big_a, big_c = 1, 0
    pa, pc = a % mod, c % mod
    while k:
        if k & 1:
            big_a, big_c = (pa * big_a) % mod, (pa * big_c + pc) % mod
        pa, pc = (pa * pa) % mod, (pa * pc + pc) % mod
        k >>= 1
    return big_a, big_c


def lcg_states(a: int, c: int, bits: int, x0: int, count: int) -> npt.NDArray[np.uint64]:
    """The states x_1 .. x_count of x_{k+1} = (a x_k + c) mod 2^bits from x_0 = ``x0``
    (``bits`` <= 64), ``np.uint64``, in :data:`LANES` lanes started by jump-ahead."""
    mod = 1 << bits
    lanes = max(1, min(LANES, count))
    steps = -(-count // lanes)
    jump_a, jump_c = _affine_power(a, c, steps, mod)
    starts = [x0 % mod]
    for _ in range(lanes - 1):
        starts.append((jump_a * starts[-1] + jump_c) % mod)
    x = np.array(starts, np.uint64)
    out = np.empty((steps, lanes), np.uint64)
    ua, uc, mask = np.uint64(a % mod), np.uint64(c % mod), np.uint64(mod - 1)
    for s in range(steps):
        x = (x * ua + uc) & mask  # uint64 wraps mod 2^64, of which 2^bits is a divisor
        out[s] = x
    return out.T.ravel()[:count]


def _word_bits(words: npt.NDArray[np.uint64], lo: int, width: int) -> npt.NDArray[np.uint64]:
    return (words >> np.uint64(lo)) & np.uint64((1 << width) - 1)


def _lcg_maker(
    a: int,
    c: int,
    bits: int,
    seed_of: Callable[[int], int],
    out_lo: int,
    out_width: int,
    part: str,
) -> Maker:
    """An LCG's output bits ``out_lo .. out_lo + out_width - 1`` of each state; ``part``
    ``all`` (those bits), ``low`` (the low ``bits`` param of them) or ``top``."""

    def make(params: dict[str, int], total: int, seed: int) -> npt.NDArray[np.uint8]:
        k = params.get("bits", out_width) if part != "all" else out_width
        lo = out_lo if part in ("all", "low") else out_lo + out_width - k
        count = -(-total // k)
        states = lcg_states(a, c, bits, seed_of(seed), count)
        return pack_values(_word_bits(states, lo, k), k)

    return make


def glibc_seed(seed: int) -> int:
    """glibc's TYPE_0 ``srand(seed)``: the state is the 32-bit seed (0 taken as 1)."""
    s = seed & 0xFFFFFFFF
    return s or 1


def java_seed(seed: int) -> int:
    """``new java.util.Random(seed)``: (seed XOR 0x5DEECE66D) mod 2^48."""
    return (seed ^ 0x5DEECE66D) & ((1 << 48) - 1)


# -- xorshift128+ ---------------------------------------------------------------------------


def _xs_step(
    s0: npt.NDArray[np.uint64], s1: npt.NDArray[np.uint64]
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """One xorshift128+ step on lanes (s[0], s[1]) = (s0, s1): (output, new s[0], new s[1])."""
    x, y = s0, s1
    out = x + y
    x = x ^ (x << np.uint64(23))
    new1 = x ^ y ^ (x >> np.uint64(18)) ^ (y >> np.uint64(5))
    return out, y, new1


def _xs_apply(cols: list[int], v: int) -> int:
    r = 0
    i = 0
    while v:
        if v & 1:
            r ^= cols[i]
        v >>= 1
        i += 1
    return r


def _xs_matrix() -> list[int]:
    """xorshift128+'s state step as a GF(2) matrix: column i = the step of basis state i
    (a state is the 128-bit integer s[0] | s[1] << 64)."""
    cols = []
    for i in range(128):
        v = 1 << i
        s0 = np.array([v & _MASK64], np.uint64)
        s1 = np.array([v >> 64], np.uint64)
        _, n0, n1 = _xs_step(s0, s1)
        cols.append(int(n0[0]) | int(n1[0]) << 64)
    return cols


def _xs_jump(steps: int) -> list[int]:
    """The matrix of ``steps`` steps (square and multiply over GF(2))."""
    result = [1 << i for i in range(128)]
    power = _xs_matrix()
    while steps:
        if steps & 1:
            result = [_xs_apply(power, c) for c in result]
        power = [_xs_apply(power, c) for c in power]
        steps >>= 1
    return result


def splitmix64(x: int) -> tuple[int, int]:
    """One SplitMix64 output and the next state (Vigna's recommended seeder)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31), x


def xorshift128p_outputs(seed: int, count: int) -> npt.NDArray[np.uint64]:
    """``count`` outputs of xorshift128+ seeded by two SplitMix64 outputs of ``seed``."""
    a, st = splitmix64(seed)
    b, _ = splitmix64(st)
    lanes = max(1, min(LANES // 4, count))
    steps = -(-count // lanes)
    jump = _xs_jump(steps)
    state = a | b << 64
    starts = [state]
    for _ in range(lanes - 1):
        starts.append(_xs_apply(jump, starts[-1]))
    s0 = np.array([s & _MASK64 for s in starts], np.uint64)
    s1 = np.array([s >> 64 for s in starts], np.uint64)
    out = np.empty((steps, lanes), np.uint64)
    for k in range(steps):
        out[k], s0, s1 = _xs_step(s0, s1)
    return out.T.ravel()[:count]


def _xorshift(params: dict[str, int], total: int, seed: int) -> npt.NDArray[np.uint8]:
    return pack_values(xorshift128p_outputs(seed, -(-total // 64)), 64)


def _xorshift_low(params: dict[str, int], total: int, seed: int) -> npt.NDArray[np.uint8]:
    return np.packbits((xorshift128p_outputs(seed, total) & np.uint64(1)).astype(np.uint8))


# -- ChaCha20-based models -----------------------------------------------------------------


def chacha_bytes(seed: int, n: int, nonce: bytes = bytes(12)) -> npt.NDArray[np.uint8]:
    """``n`` keystream bytes of the C core's ChaCha20 keyed by ``seed`` (its 32 little-endian
    bytes, RFC 8439)."""
    return np.frombuffer(native.ChaCha20(seed, nonce=nonce).keystream(n), np.uint8)


def chacha_words(seed: int, count: int) -> npt.NDArray[np.uint64]:
    """``count`` 32-bit little-endian words of the ChaCha20 keystream, as ``np.uint64``."""
    return chacha_bytes(seed, 4 * count).view("<u4").astype(np.uint64)


def _fair(params: dict[str, int], total: int, seed: int) -> npt.NDArray[np.uint8]:
    return chacha_bytes(seed, -(-total // 8))


def _stuck(params: dict[str, int], total: int, seed: int) -> npt.NDArray[np.uint8]:
    words = chacha_words(seed, -(-total // 32))
    bit = np.uint64(1 << params["bit"])
    words = words | bit if params["value"] else words & ~bit
    return pack_values(words, 32)


def _biased(params: dict[str, int], total: int, seed: int) -> npt.NDArray[np.uint8]:
    threshold = round((0.5 + params["ppm"] * 1e-6) * 65536)
    out = []
    step = 1 << 23
    for i, lo in enumerate(range(0, total, step)):
        k = min(step, total - lo)
        draws = chacha_bytes(seed, 2 * k, nonce=i.to_bytes(12, "little")).view("<u2")
        out.append((draws < threshold).astype(np.uint8))
    return np.packbits(np.concatenate(out))


def _float32(params: dict[str, int], total: int, seed: int) -> npt.NDArray[np.uint8]:
    words = chacha_words(seed, -(-total // 32))
    return pack_values((words >> np.uint64(8)) << np.uint64(8), 32)


def _modulo(params: dict[str, int], total: int, seed: int) -> npt.NDArray[np.uint8]:
    r = params["r"]
    k = (r - 1).bit_length()
    words = chacha_words(seed, -(-total // k))
    return pack_values(words % np.uint64(r), k)


def _short_period(params: dict[str, int], total: int, seed: int) -> npt.NDArray[np.uint8]:
    period = params["bits"]
    base = np.unpackbits(chacha_bytes(seed, -(-period // 8)))[:period]
    reps = -(-total // period)
    return np.packbits(np.tile(base, reps)[:total])


def _reused_key(params: dict[str, int], m: int, n: int, seed: int) -> npt.NDArray[np.uint8]:
    every = params["every"]
    keys = [
        chacha_bytes(seed, -(-n // 8), nonce=(i % every).to_bytes(12, "little"))
        for i in range(min(m, every))
    ]
    out = np.empty((m, -(-n // 8)), np.uint8)
    for i in range(m):
        out[i] = keys[i % every]
    if n % 8:
        out[:, -1] &= np.uint8((0xFF << (8 - n % 8)) & 0xFF)
    return out


def _mt19937(params: dict[str, int], total: int, seed: int) -> npt.NDArray[np.uint8]:
    return pack_values(mt19937_outputs(seed, -(-total // 32)), 32)


def mt19937_outputs(seed: int, count: int) -> npt.NDArray[np.uint64]:
    """``count`` 32-bit outputs of MT19937 after ``init_genrand(seed mod 2^32)``
    (Matsumoto and Nishimura's reference seeding; numpy's legacy ``RandomState``)."""
    bg = np.random.MT19937()
    legacy: Any = np.random.RandomState(seed & 0xFFFFFFFF).get_state(legacy=False)
    bg.state = legacy
    return bg.random_raw(count).astype(np.uint64)


# -- the library ------------------------------------------------------------------------------

_GLIBC = (
    "glibc stdlib/random_r.c, __random_r, TYPE_0: x = (1103515245 x + 12345) mod 2^31, "
    "the result x (the ANSI C example generator); from seed 1: 1103527590"
)
_MSVC = (
    "Microsoft C runtime rand(): x = 214013 x + 2531011 mod 2^32, the result bits "
    "16..30; from srand(1): 41, 18467, 6334, 26500"
)
_JAVA = (
    "java.util.Random (Java SE API, next(bits)): x = (0x5DEECE66D x + 0xB) mod 2^48, "
    "nextInt() the bits 16..47; new Random(42).nextInt() = -1170105035"
)
_XS = (
    "S. Vigna, Further scramblings of Marsaglia's xorshift generators, J. Comput. Appl. "
    "Math. 315 (2017): xorshift128+ with shifts 23, 18, 5, the output s[0] + s[1]"
)
_LOW_LAW = "bit j of a state of an LCG modulo 2^k has period 2^(j+1) (Knuth, TAOCP vol. 2, 3.2.1.1)"
_BITS = Param("bits", 8, 1, 15, "bits taken from each output")


def _lcg_specs() -> list[GeneratorSpec]:
    g = _lcg_maker
    glibc = (1103515245, 12345, 31, glibc_seed)
    msvc = (214013, 2531011, 32, lambda s: s & 0xFFFFFFFF)
    java = (0x5DEECE66D, 0xB, 48, java_seed)
    return [
        GeneratorSpec(
            "glibc-rand",
            "glibc TYPE_0 rand(): the 31 bits of each output",
            _GLIBC,
            _LOW_LAW + "; its bit 0 alternates",
            make=g(*glibc, 0, 31, "all"),
        ),
        GeneratorSpec(
            "glibc-rand-low",
            "glibc TYPE_0 rand() & 0xff: the low bits of each output (putchar(rand()))",
            _GLIBC,
            "the low 8 bits repeat every 256 outputs (2,048 bits): " + _LOW_LAW,
            (_BITS,),
            make=g(*glibc, 0, 31, "low"),
        ),
        GeneratorSpec(
            "glibc-rand-top",
            "glibc TYPE_0 rand() >> 23: the top bits of each output",
            _GLIBC,
            "bit 30 has period 2^31 outputs; " + _LOW_LAW,
            (_BITS,),
            make=g(*glibc, 0, 31, "top"),
        ),
        GeneratorSpec(
            "msvc-rand",
            "MSVC rand(): the 15 bits of each output",
            _MSVC,
            "the output's bit 0 is state bit 16, period 2^17 outputs; " + _LOW_LAW,
            make=g(*msvc, 16, 15, "all"),
        ),
        GeneratorSpec(
            "msvc-rand-low",
            "MSVC rand() & 0xff",
            _MSVC,
            "state bits 16..23: the byte repeats every 2^24 outputs",
            (_BITS,),
            make=g(*msvc, 16, 15, "low"),
        ),
        GeneratorSpec(
            "msvc-rand-top",
            "MSVC rand() >> 7: the top bits of each output",
            _MSVC,
            "state bits 23..30, periods 2^24..2^31",
            (_BITS,),
            make=g(*msvc, 16, 15, "top"),
        ),
        GeneratorSpec(
            "java-random",
            "java.util.Random nextInt(): 32 bits an output",
            _JAVA,
            "bit 0 of nextInt() is state bit 16, period 2^17 outputs; " + _LOW_LAW,
            make=g(*java, 16, 32, "all"),
        ),
        GeneratorSpec(
            "java-random-low",
            "java.util.Random nextInt() & 0xff",
            _JAVA,
            "state bits 16..23: the byte repeats every 2^24 outputs",
            (_BITS,),
            make=g(*java, 16, 32, "low"),
        ),
        GeneratorSpec(
            "java-random-top",
            "java.util.Random next(8): the top bits of the state",
            _JAVA,
            "state bits 40..47, periods 2^41..2^48",
            (_BITS,),
            make=g(*java, 16, 32, "top"),
        ),
    ]


def _other_specs() -> list[GeneratorSpec]:
    chacha = "the C core's ChaCha20 (RFC 8439; feltlab.native.ChaCha20), keyed by the seed"
    return [
        GeneratorSpec(
            "chacha20",
            "ChaCha20 keystream (fair)",
            chacha,
            "indistinguishable from uniform bits (a stream cipher)",
            make=_fair,
            fair=True,
        ),
        GeneratorSpec(
            "mt19937",
            "Mersenne Twister MT19937, 32-bit outputs",
            "M. Matsumoto and T. Nishimura, ACM TOMACS 8(1), 1998; init_genrand(seed)",
            "equidistributed in 623 dimensions; its state follows from 624 outputs",
            catchable=False,
            make=_mt19937,
        ),
        GeneratorSpec(
            "xorshift128+",
            "xorshift128+ (V8's Math.random until 2023), 64-bit outputs",
            _XS,
            "passes SP 800-22; predictable from two outputs",
            catchable=False,
            make=_xorshift,
        ),
        GeneratorSpec(
            "xorshift128+-low",
            "the lowest bit of each xorshift128+ output",
            _XS,
            "the lowest output bit is the XOR of the state's two lowest bits: a "
            "GF(2)-linear sequence of linear complexity at most 128",
            make=_xorshift_low,
        ),
        GeneratorSpec(
            "stuck-bit",
            "a ChaCha20 word with one bit stuck (a broken output line)",
            chacha,
            "bit `bit` of every 32-bit word (0 = least significant) is "
            "`value`: ones are 1/2 -+ 1/64 of the bits",
            (
                Param("bit", 0, 0, 31, "the stuck bit of each word"),
                Param("value", 0, 0, 1, "its value"),
            ),
            make=_stuck,
        ),
        GeneratorSpec(
            "biased",
            "a biased bit source (a hardware generator's bias)",
            chacha,
            "each bit is 1 with probability round((1/2 + ppm 10^-6) 2^16) / 2^16",
            (Param("ppm", 2000, -500000, 499999, "P(1) - 1/2 in parts per million"),),
            make=_biased,
        ),
        GeneratorSpec(
            "float32",
            "int(u 2^32) of a float32 u = (x >> 8) 2^-24 (numpy's float32 draw)",
            "numpy random/src/distributions: next_float, (next_uint32 "
            ">> 8) * (1 / 16777216); " + chacha,
            "the low 8 bits of every 32-bit word are 0: ones are 3/8 of the bits",
            make=_float32,
        ),
        GeneratorSpec(
            "modulo",
            "x mod r for r not a power of two, the ceil(log2 r) bits of the result",
            "rand() % r scaling (Lemire, ACM TOMACS 29(1), 2019); " + chacha,
            "values >= r never occur; a value below 2^32 mod r is more likely",
            (Param("r", 1_000_000_000, 3, (1 << 32) - 1, "the modulus"),),
            make=_modulo,
        ),
        GeneratorSpec(
            "short-period",
            "a stream that repeats after `bits` bits (a counter that wraps)",
            chacha,
            "bit i equals bit i + bits",
            (Param("bits", 1 << 16, 8, 1 << 30, "the period in bits"),),
            independent=False,
            make=_short_period,
        ),
        GeneratorSpec(
            "reused-key",
            "ChaCha20 counter mode with a reused key and nonce: every "
            "`every`-th sequence the same keystream (a fixed key at each power-up)",
            chacha,
            "sequence i equals sequence i + every",
            (Param("every", 1, 1, 1 << 20, "sequences between repeats"),),
            independent=False,
            per_sequence=_reused_key,
        ),
    ]


GENERATORS: dict[str, GeneratorSpec] = {s.name: s for s in _lcg_specs() + _other_specs()}
"""The library, by name."""


def parse_generator(text: str) -> Generator:
    """A :class:`Generator` from ``NAME[:key=value,...]``.  Raises :class:`ModelError`
    naming the known generators, or the parameter and its range."""
    name, _, rest = text.strip().partition(":")
    spec = GENERATORS.get(name.strip().lower())
    if spec is None:
        raise ModelError(f"unknown generator {text!r}; choose one of {', '.join(GENERATORS)}")
    allowed = {p.key: p for p in spec.params}
    params = {p.key: p.default for p in spec.params}
    for part in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, value = (x.strip() for x in part.partition("="))
        if not eq or key not in allowed:
            raise ModelError(
                f"generator {text!r}: bad parameter {part!r}; {spec.name} takes "
                f"{', '.join(k + '=N' for k in allowed) or 'no parameters'}"
            )
        try:
            params[key] = int(value, 0)
        except ValueError:
            raise ModelError(f"generator {text!r}: {key} must be an integer") from None
        p = allowed[key]
        if not p.lo <= params[key] <= p.hi:
            raise ModelError(f"generator {text!r}: {key} must be in {p.lo}..{p.hi} ({p.help})")
    if spec.name == "modulo" and params["r"] & (params["r"] - 1) == 0:
        raise ModelError(
            f"generator {text!r}: r is a power of two, which scales without bias; give another r"
        )
    return Generator(spec, params)


__all__ = [
    "GENERATORS",
    "Generator",
    "GeneratorSpec",
    "Param",
    "chacha_bytes",
    "glibc_seed",
    "java_seed",
    "lcg_states",
    "mt19937_outputs",
    "parse_generator",
    "splitmix64",
    "xorshift128p_outputs",
]

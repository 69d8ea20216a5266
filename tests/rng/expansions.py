"""The binary expansions of pi, e, sqrt(2) and sqrt(3) that SP 800-22's data files hold,
computed with Python integers: the integer part's bits first (pi = 11.001001..., so its
sequence begins 11001001), n bits in all, packed most significant bit first.

pi by Chudnovsky's series, e by the series of 1/k!, both summed by binary splitting; the
square roots by ``math.isqrt``.  64 guard bits make the last bit exact (the fixed-point
errors are a few units in the last guard place)."""

from __future__ import annotations

import math

import numpy as np

GUARD = 64


def _chudnovsky(a: int, b: int) -> tuple[int, int, int]:
    if b - a == 1:
        if a == 0:
            p = q = 1
        else:
            p = (6 * a - 5) * (2 * a - 1) * (6 * a - 1)
            q = a * a * a * 10939058860032000  # 640320^3 / 24
        t = p * (13591409 + 545140134 * a)
        return p, q, -t if a & 1 else t
    m = (a + b) // 2
    p1, q1, t1 = _chudnovsky(a, m)
    p2, q2, t2 = _chudnovsky(m, b)
    return p1 * p2, q1 * q2, t1 * q2 + p1 * t2


def _pi_fixed(prec: int) -> int:
    """floor(pi * 2^prec) up to the guard bits' error (14.18 decimal digits a term)."""
    terms = int(prec * math.log10(2) / 14.18) + 2
    _, q, t = _chudnovsky(0, terms)
    root = math.isqrt(10005 << (2 * prec))
    return (426880 * root * q) // t


def _inverse_factorials(a: int, b: int) -> tuple[int, int]:
    """p/q = sum_{k=a+1..b} a!/k!"""
    if b - a == 1:
        return 1, b
    m = (a + b) // 2
    p1, q1 = _inverse_factorials(a, m)
    p2, q2 = _inverse_factorials(m, b)
    return p1 * q2 + p2, q1 * q2


def _e_fixed(prec: int) -> int:
    terms = 2
    while math.lgamma(terms + 1) / math.log(2) < prec + 16:
        terms *= 2
    p, q = _inverse_factorials(0, terms)
    return (1 << prec) + (p << prec) // q


def expansion_bits(name: str, n: int) -> np.ndarray:
    """The first ``n`` bits of ``name`` ("pi", "e", "sqrt2", "sqrt3"), packed MSB first:
    uint8 array of ceil(n / 8) bytes."""
    int_bits = {"pi": 2, "e": 2, "sqrt2": 1, "sqrt3": 1}[name]
    prec = n - int_bits + GUARD
    if name == "pi":
        x = _pi_fixed(prec)
    elif name == "e":
        x = _e_fixed(prec)
    else:
        x = math.isqrt((2 if name == "sqrt2" else 3) << (2 * prec))
    x >>= GUARD
    assert x.bit_length() == n
    nbytes = (n + 7) // 8
    return np.frombuffer((x << (8 * nbytes - n)).to_bytes(nbytes, "big"), dtype=np.uint8).copy()

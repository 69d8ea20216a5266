"""A reference of the C simulator's counted tally (``feltlab.native.simulate_counted``),
test-only: the same rounds from ``simulate_rounds`` with their cards traced, the count kept
in Python card by card with exact integer arithmetic, each table looked up in numpy.  Card
inputs only (tables over the round record are not emulated).  Also the baseline of
benchmarks/bench_counted.py."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from feltlab import native


def _lookup(t: native.SideTable, initial: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    vals = [initial[:, i].astype(np.int64) for i in t.inputs]
    vals = [np.where(v == native.NO_CARD, 52, v) for v in vals]
    if t.pre is None:
        idx = sum(v * s for v, s in zip(vals, t.strides, strict=True))
    else:
        first = sum(v * s for v, s in zip(vals[: t.n_pre], t.strides[: t.n_pre], strict=True))
        cls = t.pre.reshape(-1)[first].astype(np.int64)
        rest = sum(
            (v * s for v, s in zip(vals[t.n_pre :], t.strides[t.n_pre :], strict=True)),
            np.zeros(len(initial), dtype=np.int64),
        )
        idx = cls * t.class_stride + rest
    return np.asarray(t.table.reshape(-1)[idx], dtype=np.int64)


def _value(mode: int, tags: tuple[int, ...], seen: list[int], size: int, res: int) -> int:
    remaining = size - len(seen)
    if mode == native.COUNT_SUIT:
        unseen = [size // 4] * 4
        for c in seen:
            unseen[c & 3] -= 1
        return max((52 * u - 13 * remaining) * res // remaining for u in unseen)
    if mode == native.COUNT_SUIT_RANGE:
        unseen = [size // 4] * 4
        for c in seen:
            unseen[c & 3] -= 1
        return 52 * (max(unseen) - min(unseen)) * res // remaining
    rc: int = sum(tags[c] for c in seen)
    if mode == native.COUNT_RUNNING:
        return rc
    return rc * 52 * res // remaining


def simulate_counted_reference(
    rng: native.BitGenerator,
    rules: native.SimRules,
    n_rounds: int,
    count: native.CountSpec,
    tables: tuple[native.SideTable, ...] = (),
) -> native.CountedResult:
    """What ``native.simulate_counted`` returns for a shoe (no continuous shuffler, no
    window count), computed round by round in Python."""
    tags, mode, resolution = count.tags, count.mode, count.resolution
    lowest, n_buckets = count.lowest, count.n_buckets
    res = native.simulate_rounds(rng, rules, n_rounds, trace_cap=255)
    assert res.trace is not None and res.trace_len is not None
    size = rules.decks * 52
    rounds = np.zeros(n_buckets, dtype=np.int64)
    net = [0] * n_buckets
    net_sq = [0] * n_buckets
    counts = np.zeros((n_buckets, len(tables), 256), dtype=np.int64)
    outcomes = [_lookup(t, res.initial) for t in tables]
    seen: list[int] = []
    for i in range(n_rounds):
        b = min(max(_value(mode, tags, seen, size, resolution) - lowest, 0), n_buckets - 1)
        v = int(res.net[i])
        rounds[b] += 1
        net[b] += v
        net_sq[b] += v * v
        for k in range(len(tables)):
            counts[b, k, outcomes[k][i]] += 1
        seen.extend(int(c) for c in res.trace[i, : res.trace_len[i]])
        if rules.cut_position == 0 or len(seen) >= rules.cut_position:
            seen = []
    return native.CountedResult(
        int(rounds.sum()), sum(net), sum(net_sq), rounds, tuple(net), tuple(net_sq), counts
    )

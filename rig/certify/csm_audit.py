"""Can a continuous shuffler be beaten?  The exploitability audit of a CSM (issue 26;
docs/csm-audit.md).

A continuous shuffler (rule 5.4) is believed to defeat card counting because every card goes
back into the machine.  Whether it does depends on the mechanism: cards returned may wait in a
buffer (Stephen How's model of the ShuffleMaster 126: a buffer of at least 16 cards, in which a
Hi-Lo count of the last 16 cards fed back makes a 6-deck round positive for the player more
than 8% of the time), so the cards a player just saw are missing from the next rounds.  The
audit deals rounds from the machine's model in the C round simulator
(``feltlab.native.simulate_counted`` with a :class:`feltlab.native.CsmModel`: the game's rules,
basic strategy, the side wagers' lookup tables) and buckets every round by a *window count* at
the moment of the bet: the sum of the count's tags over the last ``window`` cards seen.

For each wager in play and each window (``window``, and its halves down to 4 cards):

- the count's distribution over rounds and the wager's expectation per unit by count, with
  95% intervals (:class:`ByCount`, its buckets :class:`feltlab.math.countability.Bucket`);
- the trigger: the count t at and above which (below which, when the count's slope is negative:
  a machine that deals the cards just seen again soon) the least-squares line of the
  per-round result on the count is positive, kept when the fitted expectation of those rounds
  is positive at the one-sided Bonferroni level over every window and wager tried (so a
  machine whose count carries no information shows none at level 0.05); the *positive-round
  fraction* is the fraction of rounds on that side;
- the edge of a player who bets only then, per unit and per 100 rounds at the wager's table
  maximum, and (the main wager) of a 1-8 spread: 8 units at or above the trigger, 1 below.

The verdict is one line: ``exploitable: +x% per unit on y% of rounds`` (the best wager and
window), or ``no count of window <= W finds a positive round at this sample``, with the
rounds simulated.  The counts are :mod:`feltlab.math.counts`' (``feltlab protect``'s) and
the per-count figures :mod:`feltlab.math.countability`'s (``analyze_line``: the fitted line,
the trigger of either sign, the edges and the spread); this module runs the machine and
reports.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from feltlab import native
from feltlab.errors import FeltlabError
from feltlab.math.countability import (
    Bucket,
    Figure,
    LineCountability,
    analyze_line,
)
from feltlab.math.counts import Count, resolve_count
from feltlab.native import CsmModel
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.rules import Rules
from feltlab.seeds import SEED_DERIVATION_VERSION
from feltlab.simulation.protection import (
    run_counted,
    wager_buckets,
    why_not_counted,
    window_bucketing,
)
from feltlab.wagers import WagerType

DEFAULT_ROUNDS = 20_000_000
"""Rounds simulated a window and count by default."""
CALL_ROUNDS = 2_000_000
"""Rounds a simulator call (each call loads a fresh machine: its first rounds count fewer
cards than the window, a negligible share of a call)."""
MIN_WINDOW = 4
"""The smallest window tried (the windows are ``window``, its halves, ... down to this)."""
ALPHA = 0.05
"""The family-wise level of the trigger's one-sided test."""
SPREAD = 8
"""The main wager's spread: 8 units at or above the trigger, 1 below."""


class AuditError(FeltlabError):
    """The audit cannot run as asked (a bad count, window, wager or model); one line."""


# ---------------------------------------------------------------- expectation by count


def _number(v: Fraction) -> int | float:
    """A count value for JSON: an int when whole (every count but Wong Halves'), else a
    float."""
    return int(v) if v.denominator == 1 else float(v)


def _iv(f: Figure) -> dict[str, float | None]:
    """A figure as the audit's JSON gives it: ``{"value", "half_width"}`` (None for NaN)."""

    def g(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {"value": g(f.value), "half_width": g(f.half_width)}


@dataclass
class ByCount:
    """One wager's rounds by window count: its :class:`feltlab.math.countability.Bucket` per
    window count (the first also holds lower counts, the last higher ones) and its table
    maximum in cents.  :meth:`analyze` sets :attr:`analysis`
    (:func:`feltlab.math.countability.analyze_line`: the fitted line, the trigger of either
    sign, the fraction, the edges, the win per 100 rounds and the main wager's 1-8 spread)."""

    wager: str
    window: int
    buckets: tuple[Bucket, ...]
    max_bet: int
    analysis: LineCountability = field(init=False)

    def analyze(self, z: float) -> LineCountability:
        """Analyse the buckets at ``z`` one-sided standard errors (module doc)."""
        spread = SPREAD if self.wager == "main" else 0
        self.analysis = analyze_line(self.buckets, z=z, max_bet=self.max_bet, spread=spread)
        return self.analysis

    @property
    def total(self) -> int:
        """Rounds over every bucket."""
        return sum(b.rounds for b in self.buckets)

    def trigger_count(self) -> int | float | None:
        """The trigger's window count in the count's book units (None: no trigger)."""
        v = self.analysis.trigger_value()
        return None if v is None else _number(v)

    def win_rate(self) -> float:
        """Units won per round observed betting one unit only on the trigger's side (0 with no
        trigger): what :meth:`CsmAudit.best` ranks by."""
        a = self.analysis
        return 0.0 if a.trigger is None else a.frequency * a.edge.value

    def spread(self) -> dict[str, Any] | None:
        """The 1-8 spread (:data:`SPREAD` units on the trigger's side, 1 elsewhere): its edge
        per unit bet and cents per 100 rounds with the big bet at the table maximum."""
        a = self.analysis
        if a.trigger is None or a.spread < 2:
            return None
        unit = self.max_bet / a.spread
        r = a.spread_per_round
        return {
            "edge_per_unit_bet": _iv(a.spread_per_unit_bet),
            "cents_per_100_rounds": _iv(
                Figure(100 * unit * r.value, 100 * unit * r.half_width, r.rounds)
            ),
            "big_bet_cents": self.max_bet,
            "small_bet_cents": unit,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (docs/csm-audit.md)."""
        a, n = self.analysis, self.total
        return {
            "wager": self.wager,
            "window": self.window,
            "rounds": n,
            "expectation": _iv(a.overall),
            "trigger_count": self.trigger_count(),
            "trigger_side": ">=" if a.direction > 0 else "<=",
            "positive_round_fraction": a.frequency,
            "edge_per_unit": _iv(a.edge),
            "observed_edge_per_unit": _iv(a.observed_edge),
            "slope_per_count": a.line.slope,
            "cents_per_100_rounds_at_max": _iv(a.win_per_100),
            "max_bet_cents": self.max_bet,
            "spread_1_8": self.spread() if self.wager == "main" else None,
            "by_count": [
                {
                    "count": _number(b.value),
                    "rounds": b.rounds,
                    "fraction": b.rounds / n if n else 0.0,
                    "expectation": _iv(Figure(float(b.total / b.rounds), b.half_width(), b.rounds)),
                }
                for b in self.buckets
                if b.rounds > 0
            ],
        }


# ---------------------------------------------------------------- the simulation


def wagers_in_play(names: Sequence[str], rules: Rules) -> list[WagerType]:
    """The named installed wagers (``all``: the main wager and every side wager the C
    simulator settles through a lookup table).  Raises :class:`AuditError` for a wager that
    is unknown or that ``feltlab protect`` could not count either
    (:func:`feltlab.simulation.protection.why_not_counted`: paid by a jackpot panel, outside
    its deck range or without a lookup table)."""
    reg = collect_wagers(get_plugin_manager())
    if "all" in names:
        names = [n for n in reg.names() if why_not_counted(reg[n](), rules) is None]
    out: list[WagerType] = []
    for name in dict.fromkeys(names):
        if name not in reg.names():
            raise AuditError(
                f"wager {name!r} is not installed: choose from {', '.join(reg.names())} or all"
            )
        w = reg[name]()
        why = why_not_counted(w, rules)
        if why:
            raise AuditError(f"wager {name!r} cannot be audited: {why}")
        out.append(w)
    return out


def simulate_window(
    model: CsmModel,
    rules: Rules,
    wagers: Sequence[WagerType],
    count: Count,
    window: int,
    rounds: int,
    seed: int,
) -> list[ByCount]:
    """Every wager's rounds by the window count of ``window`` cards
    (:func:`feltlab.simulation.protection.window_bucketing`), ``rounds`` rounds dealt off
    ``model`` by :func:`feltlab.simulation.protection.run_counted` (``feltlab protect``'s
    driver) in calls of :data:`CALL_ROUNDS` (call i from the seed's generator jumped i + 1
    times, :func:`feltlab.seeds.chunk_generator`)."""
    b = window_bucketing(count, window)
    ws = list(wagers)
    tally = run_counted(rules, ws, b, rounds, seed=seed, chunk_rounds=CALL_ROUNDS, csm=model)
    return [ByCount(w.name, window, wager_buckets(tally, b, w), w.limits.maximum) for w in ws]


def windows_up_to(window: int) -> list[int]:
    """``window`` and its halves down to :data:`MIN_WINDOW` (largest first)."""
    out = [window]
    while out[-1] // 2 >= MIN_WINDOW:
        out.append(out[-1] // 2)
    return out


# ---------------------------------------------------------------- the audit


@dataclass
class CsmAudit:
    """The audit's figures (module doc): per count and window, every wager's
    :class:`ByCount`; the verdict; what was simulated and how fast."""

    model: CsmModel
    rules: Rules
    rules_name: str
    decks: int
    count_name: str
    window: int
    rounds: int
    seed: int
    results: list[ByCount] = field(default_factory=list)
    counts: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    rounds_simulated: int = 0
    z: float = math.nan
    source: str = ""
    capture: dict[str, Any] | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    """Wagers of ``all`` left out, with the reason (e.g. no count of their own for eor)."""

    def best(self) -> ByCount | None:
        """The wager and window of largest win per round at its trigger (None: no trigger)."""
        found = [r for r in self.results if r.analysis.trigger is not None]
        if not found:
            return None
        return max(found, key=lambda r: r.win_rate())

    def verdict(self) -> str:
        """One line (module doc)."""
        b = self.best()
        sim = f"{self.rounds_simulated:,} rounds simulated"
        if b is None:
            return (
                f"no count of window <= {self.window} finds a positive round at this sample ({sim})"
            )
        e = b.analysis.edge
        trig = b.trigger_count() or 0
        side = ">=" if b.analysis.direction > 0 else "<="
        return (
            f"exploitable: +{100 * e.value:.2f}% per unit on {100 * b.analysis.frequency:.2f}% of "
            f"rounds ({b.wager}, {self.counts.get(b.wager, self.count_name)} of the last "
            f"{b.window} cards {side} {trig:+g}; {sim})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict(),
            "exploitable": self.best() is not None,
            "model": {
                "kind": self.model.kind,
                "slots": self.model.slots,
                "buffer": self.model.buffer,
                "policy": self.model.policy,
                "batch": self.model.batch,
                "description": self.model.describe(),
            },
            "source": self.source,
            "capture": self.capture,
            "rules": self.rules_name,
            "decks": self.decks,
            "count": self.count_name,
            "counts": self.counts,
            "windows": sorted({r.window for r in self.results}, reverse=True),
            "rounds_per_window": self.rounds,
            "rounds_simulated": self.rounds_simulated,
            "seed": self.seed,
            "seed_derivation": SEED_DERIVATION_VERSION,
            "simulator_version": native.SIM_VERSION,
            "z_one_sided": self.z,
            "alpha": ALPHA,
            "seconds": self.seconds,
            "rounds_per_second": self.rounds_simulated / self.seconds if self.seconds else None,
            "results": [r.to_dict() for r in self.results],
            "skipped": dict(self.skipped),
        }


def audit(
    model: CsmModel,
    rules: Rules,
    *,
    wagers: Sequence[str] = ("main",),
    count: str = "hilo",
    window: int = 16,
    rounds: int = DEFAULT_ROUNDS,
    seed: int = 0,
    rules_name: str = "",
    source: str = "",
    windows: Sequence[int] | None = None,
) -> CsmAudit:
    """Audit ``model`` under ``rules`` (module doc): the wagers named (``all``: every tabled
    one), ``count`` (:func:`feltlab.math.counts.resolve_count`: a built-in count, ``eor``
    (each wager its own best linear count) or ``tags:A,2,...,K``; a count's tags summed over
    the window, whatever its mode), windows ``window`` and its halves (or ``windows``),
    ``rounds`` rounds each; with ``all``, a wager the count cannot serve (``eor`` for a
    wager decided by play) is left out, its reason in ``skipped``.  Raises
    :class:`AuditError` (one line) for a bad window, wager or model or no wager left,
    :class:`feltlab.errors.CountError` for a bad count."""
    from scipy import stats  # start-up: scipy only when the audit is judged

    try:
        model.check_table(rules.decks)
    except ValueError as exc:
        raise AuditError(str(exc)) from None
    if not 1 <= window <= rules.decks * 52:
        raise AuditError(
            f"window {window}: give 1..{rules.decks * 52} cards (the last cards seen, at most "
            "the machine's)"
        )
    if not 1_000 <= rounds <= 10**11:
        raise AuditError(f"rounds {rounds}: give 1,000..10^11 rounds a window")
    in_play = wagers_in_play(wagers, rules)
    groups: dict[tuple[int, ...], tuple[Count, list[WagerType]]] = {}
    names: dict[str, str] = {}
    skipped: dict[str, str] = {}
    every = any(w.strip().lower() == "all" for w in wagers)
    for wager in in_play:
        try:
            c = resolve_count(count, wager, rules.decks, rules=rules)
        except FeltlabError as exc:  # with all: left out with the reason, as protect --all does
            if not every:
                raise
            skipped[wager.name] = f"no count of its own: {str(exc).splitlines()[0]}"
            continue
        names[wager.name] = c.label
        groups.setdefault(c.tags, (c, []))[1].append(wager)
    if not groups:
        raise AuditError(f"no wager to audit: {'; '.join(f'{k}: {v}' for k, v in skipped.items())}")
    a = CsmAudit(
        model,
        rules,
        rules_name,
        rules.decks,
        next(iter(names.values())) if count != "eor" else "each wager's best linear count",
        window,
        rounds,
        seed,
        counts=names,
        source=source,
        skipped=skipped,
    )
    t0 = time.perf_counter()
    for c, ps in groups.values():
        for w in windows or windows_up_to(window):
            a.results += simulate_window(model, rules, ps, c, w, rounds, seed)
            a.rounds_simulated += rounds
    a.seconds = time.perf_counter() - t0
    a.z = float(stats.norm.isf(ALPHA / max(len(a.results), 1)))
    for r in a.results:
        r.analyze(a.z)
    return a


# ---------------------------------------------------------------- the plot


def plot_expectation(a: CsmAudit, path: Path) -> Path:
    """A PNG of each wager's expectation per unit against the window count (95% intervals;
    buckets of at least 1,000 rounds), the trigger marked: ``path``."""
    import matplotlib  # start-up: matplotlib only when a plot is asked for

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # start-up: matplotlib only when a plot is asked for

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for r in a.results:
        keep = [b for b in r.buckets if b.rounds >= 1_000]
        if not keep:
            continue
        x = [float(b.value) for b in keep]
        y = [100 * float(b.total / b.rounds) for b in keep]
        e = [100 * b.half_width() for b in keep]
        ax.errorbar(x, y, yerr=e, marker="o", ms=3, capsize=2, label=f"{r.wager}, W={r.window}")
        trig = r.trigger_count()
        if trig is not None:
            ax.axvline(trig, ls=":", lw=1, color="grey")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel(f"window count ({a.count_name}) at the bet")
    ax.set_ylabel("expectation per unit (%)")
    ax.set_title(f"{a.model.describe()}: expectation by count")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

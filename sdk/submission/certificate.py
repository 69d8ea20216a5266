"""The certificate of a wager: every cell of its grid with its exact figures, their
confirmation by simulation and the countability summary of game protection.

Nothing here recomputes what exists: a cell's PAR sheet is :func:`feltlab.math.parsheet.
par_sheet` (a wager decided by the initial deal: exact enumeration) or :func:`feltlab.math.
play_decided.play_par_sheet` (decided by play: the exact analysis, the C core's dealer
draw-out, where the wager reads rank-level facts; else simulated), the very sheets ``feltlab
math`` prints; its countability is :func:`feltlab.simulation.protection.protect`'s, the
report ``feltlab protect`` prints; the confirmation is :mod:`feltlab.submission.
confirmation`'s.  An exact figure does not depend on the dealing (an ideal continuous
shuffler deals every round from the full composition, as the exact figure assumes), so a
continuous shuffler's cell shares its shoe cell's sheet; its countability differs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from feltlab.errors import CountError, WagerError
from feltlab.math import parsheet, play_decided
from feltlab.math.counts import Count, resolve_count
from feltlab.math.parsheet import ParSheet
from feltlab.rules import Rules
from feltlab.seeds import derive_seed
from feltlab.simulation.protection import protect
from feltlab.submission.confirmation import (
    FRESH_SHOE_MODEL,
    RECHECK_FACTOR,
    STAND_ONLY_MODEL,
    Confirmation,
    Disagreement,
    confirm,
    simulate_counts,
    stands_only,
)
from feltlab.submission.grid import CSM, DEALINGS, EITHER, Cell, Grid, cell_rules, plan_grid
from feltlab.submission.jurisdictions import Jurisdiction
from feltlab.wagers import WagerType

EXACT_ENUMERATION = "exact enumeration"
"""A card-decided wager's method: every ordered deal of its cards (feltlab.math.parsheet)."""
ANALYZER = "analyzer"
"""A play-decided wager's exact method: the C core's draw-out of the dealer's hand over the
exact composition (feltlab.math.play_decided, native/src/dealer_final.c)."""
SIMULATION = "simulation"
"""A play-decided wager with no exact analysis: the C round simulator."""
DEFAULT_COUNTS = ("hilo",)
"""The counts of each cell's countability summary: Hi-Lo, ``feltlab protect``'s default.  The
wager's own best linear count (``eor``) is asked for with ``--count eor``: its effects of
removal cost about a minute a paytable and deck count for a four-card wager on the shared
host (Lucky Ladies, 63-77 s at load 30), so it is computed once per paytable and deck count
(:class:`OwnCounts`)."""
DEFAULT_PROTECT_ROUNDS = 2_000_000
"""Rounds a count of each cell's protection report (``feltlab submit --protect-rounds``)."""
SEED_DOMAIN = "feltlab-submit"
"""The domain of a submission's simulation seeds (:func:`feltlab.seeds.derive_seed`)."""


@dataclass(frozen=True)
class CountSummary:
    """One count of a cell's protection report: the count's name, the verdict, the trigger
    (a count value in book units, or None), the rounds at or above it and the counter's
    edge per unit there (None without a trigger); or ``skipped`` with the reason."""

    count: str
    verdict: str
    trigger: float | None = None
    frequency: float | None = None
    edge: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "count": self.count,
            "verdict": self.verdict,
            "trigger": self.trigger,
            "frequency": self.frequency,
            "edge_per_unit": self.edge,
        }


@dataclass(frozen=True)
class CellResult:
    """A cell with its ``rules``, the PAR ``sheet``, the ``method`` (one of
    :data:`EXACT_ENUMERATION`, :data:`ANALYZER`, :data:`SIMULATION`), the ``confirmation``
    (None for a simulated sheet: nothing exact to confirm) and the ``countability``."""

    cell: Cell
    rules: Rules
    sheet: ParSheet
    method: str
    confirmation: Confirmation | None
    countability: tuple[CountSummary, ...]
    protect_seed: int

    @property
    def penetration(self) -> float | None:
        """The fraction of the shoe dealt before the cutting card; None for a continuous
        shuffler."""
        if self.cell.dealing == CSM:
            return None
        return 1 - self.rules.cut_card_from_back / self.rules.cards


@dataclass(frozen=True)
class Certificate:
    """Every figure of a submission: the wager's declaration, the form, the grid's cells and
    restrictions, and the settings behind every simulated figure (``seed``, ``rounds`` of
    each confirmation, ``protect_rounds`` a count, ``counts``)."""

    wager: WagerType
    form: Jurisdiction
    grid: Grid
    cells: tuple[CellResult, ...]
    seed: int
    rounds: int
    protect_rounds: int
    counts: tuple[str, ...]


def method_of(wager: WagerType, sheet: ParSheet) -> str:
    """The method that computed ``sheet`` for ``wager``."""
    if not wager.round_fields:
        return EXACT_ENUMERATION
    return ANALYZER if sheet.method == "exact" else SIMULATION


def refusal(wager_type: type[WagerType]) -> str | None:
    """Why ``wager_type`` has no certificate here (None: it has one)."""
    if wager_type.name == "main":
        return (
            "the main wager's math is the analyzer's (`feltlab math main`); submit certifies "
            "side wagers"
        )
    if wager_type.decided_by_panel or any(
        p is None for t in wager_type.paytables.values() for p in t.pays
    ):
        return (
            f"{wager_type.title}'s wins are paid by the jackpot panel's prize table: its "
            "return is the panel's (`feltlab math --profile`), not a paytable's"
        )
    if not wager_type.round_fields and not wager_type.card_roles:
        return f"{wager_type.title} declares neither card_roles nor round_fields: no classifier"
    return None


def simulation_seed(seed: int, wager: str, decks: int, dealing: str, dealer: str) -> int:
    """The seed of one confirming simulation (or ``"protect"``'s) under the submission's
    ``seed`` (:func:`feltlab.seeds.derive_seed`, domain :data:`SEED_DOMAIN`)."""
    return derive_seed(seed, wager, decks, dealing, dealer, domain=SEED_DOMAIN)


def _sheet(wager: WagerType, rules: Rules, rules_name: str, rounds: int, seed: int) -> ParSheet:
    if wager.round_fields:
        return play_decided.play_par_sheet(
            wager, rules, rules_name=rules_name, rounds=rounds, seed=seed
        )
    return parsheet.par_sheet(wager, rules.decks)


class OwnCounts:
    """The wagers' own best linear counts (``eor``), each computed once per paytable and
    deck count (a failure too: its error is raised again)."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, str, int], Count | CountError] = {}

    def count(self, wager: WagerType, decks: int) -> Count:
        """``resolve_count("eor", wager, decks)``, remembered."""
        key = (wager.name, wager.paytable.name, decks)
        if key not in self.known:
            try:
                self.known[key] = resolve_count("eor", wager, decks)
            except CountError as exc:
                self.known[key] = exc
        got = self.known[key]
        if isinstance(got, CountError):
            raise got
        return got


def _countability(
    wager: WagerType,
    rules: Rules,
    counts: Sequence[str],
    rounds: int,
    seed: int,
    own_counts: OwnCounts,
) -> tuple[CountSummary, ...]:
    def own(w: WagerType) -> Count:
        return own_counts.count(w, rules.decks)

    specs: list[Count | Callable[[WagerType], Count]] = []
    for name in counts:
        if name.strip().lower() == "eor":
            specs.append(own)
        else:
            specs.append(resolve_count(name))
    rep = protect(rules, [wager], specs, rounds, seed=seed)
    out = []
    for r in rep.results:
        a = r.analysis
        found = a.trigger is not None
        trig = a.trigger_value()
        out.append(
            CountSummary(
                r.count.name,
                # protect's advice names its own option; submit's rounds of a count are
                # --protect-rounds (--rounds is the confirmation's): the filed text must say so
                a.verdict.replace("(--rounds)", "(--protect-rounds)"),
                None if trig is None else float(trig),
                a.frequency if found else None,
                a.edge_per_unit.value if found else None,
            )
        )
    for s in rep.skipped:  # protect names the wager, not the count, of what it left out
        which = "eor" if s.reason.startswith("no count of its own") else ", ".join(counts)
        out.append(CountSummary(which, f"not reported: {s.reason}"))
    return tuple(out)


@dataclass(frozen=True)
class _Group:
    """The exact cells one confirming simulation settles: the same decks, dealing and dealer
    rule, one paytable each."""

    wager: str
    rules: Rules
    cells: list[Cell]
    sheets: list[ParSheet]
    wagers: list[WagerType]


def _confirm_group(
    g: _Group,
    rounds: int,
    seed: int,
    workers: int,
    scheduler: str | None,
    say: Callable[[str], None],
) -> dict[Cell, Confirmation]:
    """Each exact cell of ``g`` confirmed, a cell beyond the limit re-checked once
    (:mod:`feltlab.submission.confirmation`); raises :class:`Disagreement` for the first
    cell that still disagrees."""
    first = g.cells[0]
    model = STAND_ONLY_MODEL if stands_only(g.wagers[0]) else FRESH_SHOE_MODEL

    def run(n: int, label: str) -> list[Confirmation]:
        s_seed = simulation_seed(seed, g.wager, first.decks, first.dealing, label)
        got, secs = simulate_counts(
            g.rules, g.wagers, n, s_seed, workers=workers, scheduler=scheduler
        )
        say(
            f"simulated {len(g.cells)} cell(s) at {first.decks} decks, {first.dealing}, "
            f"{first.dealer}: {n:,} rounds in {secs:.1f} s ({n / max(secs, 1e-9):,.0f} rounds/s)"
        )
        return [
            confirm(sheet, counts, n, s_seed, model)
            for sheet, counts in zip(g.sheets, got, strict=True)
        ]

    firsts = run(rounds, first.dealer)
    rechecks = None
    if not all(f.agrees for f in firsts):
        rechecks = run(rounds * RECHECK_FACTOR, f"{first.dealer}/recheck")
    out: dict[Cell, Confirmation] = {}
    for i, c in enumerate(g.cells):
        conf = firsts[i]
        if not conf.agrees and rechecks is not None:
            say(f"re-checked {c.label}: z {conf.z:+.2f}, then {rechecks[i].z:+.2f}")
            conf = dataclasses.replace(rechecks[i], first=conf)
        if not conf.agrees:
            raise Disagreement(c.label, conf)
        out[c] = conf
    return out


def build_certificate(
    wager_type: type[WagerType],
    form: Jurisdiction,
    paytables: Sequence[str] = (),
    *,
    rounds: int,
    seed: int = 1,
    protect_rounds: int = DEFAULT_PROTECT_ROUNDS,
    counts: Sequence[str] = DEFAULT_COUNTS,
    workers: int = 1,
    scheduler: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Certificate:
    """The certificate of ``wager_type`` under ``form`` (see the module docstring).

    Raises :class:`WagerError` for a wager with no certificate (:func:`refusal`) or an
    unknown paytable, :class:`Disagreement` at the first cell whose simulation disagrees
    with its exact figure, :class:`CountError` for an unknown count."""
    why = refusal(wager_type)
    if why:
        raise WagerError(f"{wager_type.name}: no submission: {why}")
    grid = plan_grid(wager_type, form, paytables)
    for name in counts:  # an unknown count refused before any simulation
        if name.strip().lower() != "eor":
            resolve_count(name)
    base_name = form.rules_preset
    wagers = {p: wager_type(paytable=p) for p in grid.paytables}
    say = progress or (lambda _msg: None)
    # the exact sheets: one per paytable, decks and dealer rule (the dealing cannot change it)
    sheets: dict[tuple[str, int, str], ParSheet] = {}
    groups: dict[tuple[int, str, str], list[Cell]] = {}
    for cell in grid.cells:
        groups.setdefault((cell.decks, cell.dealing, cell.dealer), []).append(cell)
        key = (cell.paytable, cell.decks, cell.dealer)
        if key not in sheets:
            rules = cell_rules(Rules.preset(base_name), cell.decks, DEALINGS[0], cell.dealer)
            sim_seed = simulation_seed(seed, wager_type.name, cell.decks, "sheet", cell.dealer)
            sheets[key] = _sheet(wagers[cell.paytable], rules, base_name, rounds, sim_seed)
    say(f"{len(sheets)} PAR sheets computed")
    confirmations: dict[Cell, Confirmation] = {}
    for (decks, dealing, dealer), cells in groups.items():
        exact = [c for c in cells if sheets[(c.paytable, decks, dealer)].method == "exact"]
        if exact:
            group = _Group(
                wager_type.name,
                cell_rules(Rules.preset(base_name), decks, dealing, dealer),
                exact,
                [sheets[(c.paytable, decks, dealer)] for c in exact],
                [wagers[c.paytable] for c in exact],
            )
            confirmations.update(_confirm_group(group, rounds, seed, workers, scheduler, say))
    results = []
    own_counts = OwnCounts()
    for cell in grid.cells:
        rules = cell_rules(Rules.preset(base_name), cell.decks, cell.dealing, cell.dealer)
        w = wagers[cell.paytable]
        sheet = sheets[(cell.paytable, cell.decks, cell.dealer)]
        p_seed = simulation_seed(seed, wager_type.name, cell.decks, cell.dealing, "protect")
        summary = _countability(w, rules, counts, protect_rounds, p_seed, own_counts)
        results.append(
            CellResult(
                cell, rules, sheet, method_of(w, sheet), confirmations.get(cell), summary, p_seed
            )
        )
    say(f"countability of {len(results)} cells at {protect_rounds:,} rounds a count")
    return Certificate(
        wagers[grid.paytables[0]],
        form,
        grid,
        tuple(results),
        seed,
        rounds,
        protect_rounds,
        tuple(counts),
    )


def cell_dealer_rules(cell: Cell) -> str:
    """The dealer rule of a cell in words."""
    if cell.dealer == EITHER:
        return "S17 or H17 (the wager is decided before the dealer draws)"
    return "dealer hits soft 17" if cell.dealer == "H17" else "dealer stands on soft 17"

"""The wager conformance kit: a pytest plugin that proves a wager plugin keeps feltlab's contract.

feltlab registers this module with pytest through a ``pytest11`` entry point
(``feltlab_conformance``), so it is active in any environment where feltlab is installed.  A
vendor points it at a wager by subclassing :class:`WagerConformance` in a test module::

    from feltlab.conformance import WagerConformance

    class TestLucky7(WagerConformance):
        wager = "lucky7"          # the registered name, found through the entry point
        # plugin = "lucky7_wager.plugin"   # or: register this module instead of entry points

and pytest runs the check set, parametrised over the wager's paytables:

============================================ ==============================================
check                                        what it proves
============================================ ==============================================
``test_hooks_valid``                         every ``feltlab_*`` function of the plugin is
                                             a ``@hookimpl`` of a real hook, and the wager
                                             type is well declared
``test_paytable_exact[PT]``                  pays are exact: ``Fraction`` (or int) >= 0,
                                             the losing outcome (index 0) -1
``test_settlement_matches_classifier[PT]``   in live rounds through the engine,
                                             ``settle()`` decides every outcome exactly as
                                             ``classify()`` and the paytable do
``test_house_edge_matches_monte_carlo[PT]``  the exact PAR sheet's return lies within the
                                             Monte Carlo confidence interval of the C
                                             round simulator
``test_deck_limits_honoured``                ``min_decks``/``max_decks`` are within 4-8
                                             (rule 3.3(a)) and a table refuses the wager
                                             outside them
``test_money_integer_cents[PT]``             limits and every settlement are integer cents
``test_deterministic_for_seed[PT]``          the classifier is a pure function of the cards;
                                             a seed gives the same simulation and the same
                                             live session
``test_protection_summary[PT]``              game protection (``feltlab protect``): the
                                             wager's verdict under each of
                                             ``protection_counts``, recorded in the report
                                             (a ``protection`` property of the JUnit XML,
                                             and the run's "feltlab game protection"
                                             summary); with ``allow_countable = False`` a
                                             countable wager fails
============================================ ==============================================

Class attributes tune it (``rules``, ``rounds``, ``seed``, ``confidence``, ``paytables``); the
ini option ``feltlab_conformance_rounds`` overrides ``rounds`` for a whole run.  Every failure
is a one-paragraph message naming the wager, the paytable, the cards and the fix.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

from feltlab.conformance.evidence import (
    CANDIDATES_PER_OUTCOME,
    candidates,
    check_live,
    declaration_problems,
    hook_problems,
    live_round,
    monte_carlo,
    paytable_problems,
    sample_rows,
    session_log,
)
from feltlab.conformance.resolution import ConformanceError, Spec, Target, fail, resolve, z_score
from feltlab.errors import FeltlabError, RulesError, WagerError

MARKER = "feltlab_conformance"


def _round_settlement(t: Target, paytable: str, stake: int, *, rounds: int | None = None) -> None:
    """A play-decided wager: live sessions settle every bet as ``classify_round`` on the
    box's round record and the paytable say, in integer cents, with the dealer's hand played
    out when the wager requires it."""
    from feltlab.conformance.rounds import SESSION_ROUNDS, live_session  # pytest11

    s = live_session(t, paytable, stake=stake, rounds=rounds or SESSION_ROUNDS)
    label = f"{t.label}, paytable {paytable!r}, rules {t.rules_name!r}, {stake} cents staked"
    if s.short_dealer:
        fail(
            f"{label}: the wager sets dealer_plays_out but the dealer stopped short of 17 in "
            f"{len(s.short_dealer)} round(s) (e.g. dealer {s.short_dealer[0]}): the table must "
            "complete the dealer's hand while such a wager is in play"
        )
    if s.mismatches:
        more = f" (and {len(s.mismatches) - 1} more)" if len(s.mismatches) > 1 else ""
        fail(
            f"{label}: {s.mismatches[0]}{more}: settle() must agree with classify_round() on "
            "the round record (drop the settle() override, or decide through "
            "self.classify_round(view.record.row()) and self.paytable.net)"
        )
    bad = [x for *_, x in s.settled if isinstance(x.net, bool) or not isinstance(x.net, int)]
    if bad:
        fail(f"{label}: settled net {bad[0].net!r}: Settlement.net must be an int of cents")


ROUNDS_INI = "feltlab_conformance_rounds"


# ===================================================================== pytest hooks


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``feltlab_conformance_rounds`` ini option."""
    parser.addini(
        ROUNDS_INI,
        "Monte Carlo rounds per paytable for the feltlab wager conformance kit "
        "(overrides WagerConformance.rounds)",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``feltlab_conformance`` marker (the kit's checks carry it)."""
    config.addinivalue_line(
        "markers", f"{MARKER}: a check of the feltlab wager conformance kit (feltlab.conformance)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise the checks of a :class:`WagerConformance` subclass over its paytables."""
    cls = metafunc.cls
    if cls is None or not issubclass(cls, WagerConformance):
        return
    if "paytable" not in metafunc.fixturenames:
        return
    try:
        names = list(cls.paytables or resolve(_spec(cls)).paytable_names)
    except Exception:  # reported, readably, by the check itself
        names = ["<unresolved>"]
    metafunc.parametrize("paytable", names)


def _spec(cls: type[WagerConformance]) -> Spec:
    if not cls.wager:
        raise ConformanceError(
            f'{cls.__name__} does not say which wager to check: set `wager = "<name>"`'
        )
    return Spec(cls.wager, cls.plugin, cls.rules, cls.decks)


# ===================================================================== the check set


class WagerConformance:
    """Base class of a wager's conformance tests: subclass it as ``Test...`` and set ``wager``.

    Attributes a subclass may set:

    - ``wager``: the wager type's registered name (required).
    - ``plugin``: ``"module"`` or ``"module:object"``: register this plugin instead of loading
      the ``feltlab`` entry points (a plugin not installed yet, or a test double).
    - ``paytables``: the paytable names to check (default: all of them).
    - ``rules``: the :class:`feltlab.Rules` preset of the live rounds and the simulation
      (default ``"vegas_s17"``; its deck count is moved into the wager's range if needed).
    - ``decks``: the deck count of the PAR sheet and the simulation (default: the rules',
      within the wager's range).
    - ``rounds``: Monte Carlo rounds per paytable (default 400,000; ini option
      ``feltlab_conformance_rounds`` overrides it).
    - ``seed``: the seed of the simulation and of the live session.
    - ``confidence``: of the Monte Carlo interval (default 0.99: a correct wager fails one
      seed in a hundred; a fixed seed keeps the verdict reproducible).
    - ``allow_player_edge``: accept a paytable that pays the player on average (a deliberate
      promotion); by default a non-positive exact house edge fails.
    - ``protection_counts``: the counts of the game protection summary
      (:data:`feltlab.math.counts.COUNT_CHOICES`; default Hi-Lo, the richest-suit excess and the
      wager's own best linear count), ``protection_rounds`` its rounds a count (default
      200,000, seed ``seed``, under ``rules`` with their cutting card).
    - ``allow_countable``: False fails a wager a counter beats under any of the counts (a
      vendor claiming it cannot be counted); by default the verdicts are recorded only.
    """

    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [getattr(pytest.mark, MARKER)]

    wager: ClassVar[str] = ""
    plugin: ClassVar[str | None] = None
    paytables: ClassVar[Sequence[str]] = ()
    rules: ClassVar[str] = "vegas_s17"
    decks: ClassVar[int | None] = None
    rounds: ClassVar[int] = 400_000
    seed: ClassVar[int] = 1
    confidence: ClassVar[float] = 0.99
    allow_player_edge: ClassVar[bool] = False
    protection_counts: ClassVar[Sequence[str]] = ("hilo", "suit-excess", "eor")
    protection_rounds: ClassVar[int] = 200_000
    allow_countable: ClassVar[bool] = True

    # ----------------------------------------------------------------- helpers
    def _target(self) -> Target:
        try:
            return resolve(_spec(type(self)))
        except ConformanceError as exc:
            message = str(exc)
        fail(message)

    def _rounds(self, request: pytest.FixtureRequest) -> int:
        raw = str(request.config.getini(ROUNDS_INI) or "").strip()
        return int(raw) if raw else int(self.rounds)

    # ----------------------------------------------------------------- checks
    def test_hooks_valid(self) -> None:
        """Hooks exist and are marked; the wager type is well declared."""
        t = self._target()
        problems = list(hook_problems(t)) + list(declaration_problems(t))
        if problems:
            fail(f"{t.label}: " + "; ".join(problems))

    def test_paytable_exact(self, paytable: str) -> None:
        """Pays are exact non-negative numbers; the losing outcome pays -1."""
        t = self._target()
        problems = paytable_problems(t, paytable)
        if problems:
            fail(f"{t.label}, paytable {paytable!r}: " + "; ".join(problems))

    def test_settlement_matches_classifier(self, paytable: str) -> None:
        """Live rounds settle every outcome as the classifier and the paytable say."""
        t = self._target()
        w = t.instance(paytable)
        if w.round_fields:
            return _round_settlement(t, paytable, w.limits.minimum)
        rules = t.rules
        missing = []
        for outcome, rows in candidates(t, paytable).items():
            reached = False
            for row in rows:
                live = live_round(t, w, row, stake=w.limits.minimum)
                check_live(t, w, live)
                if live.planned_dealt and live.settlement.outcome == w.paytable.outcomes[outcome]:
                    top = w.limits.maximum - w.limits.maximum % w.limits.unit
                    check_live(t, w, live_round(t, w, row, stake=top))
                    reached = True
                    break
            if not reached:
                missing.append(w.paytable.outcomes[outcome])
        if missing:
            fail(
                f"{t.label}, paytable {paytable!r}: no live round under rules {t.rules_name!r} "
                f"({rules.decks} decks) settled the outcome(s) {missing}, though the "
                f"classifier gives them for {CANDIDATES_PER_OUTCOME} deals each: settle() "
                "must reach every outcome classify() can return"
            )

    def test_house_edge_matches_monte_carlo(
        self, paytable: str, request: pytest.FixtureRequest
    ) -> None:
        """The exact PAR sheet agrees with the C round simulator within its interval."""
        from feltlab.math import parsheet  # pytest11: kept light, loaded by every pytest run

        t = self._target()
        w = t.instance(paytable)
        if any(p is None for p in w.paytable.pays):
            pytest.skip("a jackpot paytable: its prizes come from the panel, not the cards")
        if paytable_problems(t, paytable):
            pytest.skip("the paytable is not exact: test_paytable_exact names the problem")
        rounds = self._rounds(request)
        if w.round_fields:
            from feltlab.conformance.rounds import monte_carlo_check  # pytest11

            try:
                message = monte_carlo_check(
                    t, paytable, rounds, self.seed, z_score(self.confidence)
                )
            except LookupError as exc:
                pytest.skip(f"no exact PAR sheet ({exc}): its simulated PAR sheet is the figure")
            if message:
                fail(message)
            return
        sheet = parsheet.par_sheet(w, t.decks)
        mc = monte_carlo(t, paytable, rounds, self.seed)
        z = z_score(self.confidence)
        half = z * math.sqrt(max(mc.variance, 0.0) / mc.offered) if mc.offered else math.inf
        exact = float(sheet.return_)
        if not abs(mc.mean - exact) <= half:
            fail(
                f"{t.label}, paytable {paytable!r}, {t.decks} decks: the exact house edge is "
                f"{-100 * exact:.4f}% (par_sheet) but the C round simulator gives "
                f"{-100 * mc.mean:.4f}% ± {100 * half:.4f}% ({100 * self.confidence:g}% "
                f"interval, {rounds:,} rounds, seed {self.seed}): the classifier does not "
                "decide dealt rounds as it decides the enumerated deals (is it a pure, "
                "row-by-row function of the cards, for any batch size?)"
            )

    def test_house_keeps_an_edge(self, paytable: str) -> None:
        """The exact house edge is positive (unless ``allow_player_edge``); a paytable with no
        cited source draws a warning."""
        from feltlab.math import parsheet  # pytest11: kept light, loaded by every pytest run

        t = self._target()
        w = t.instance(paytable)
        source = (w.paytable.source or "").strip()
        if not source or source.startswith("<"):
            warnings.warn(
                f"{t.label}, paytable {paytable!r}: cite where its figures come from "
                "(Paytable(..., source=...)), as a regulator will ask",
                stacklevel=1,
            )
        if any(p is None for p in w.paytable.pays) or self.allow_player_edge:
            return
        if paytable_problems(t, paytable):
            pytest.skip("the paytable is not exact: test_paytable_exact names the problem")
        if w.round_fields:
            from feltlab.conformance.rounds import simulated_edge  # pytest11

            edge = simulated_edge(t, paytable, 400_000, self.seed)
            if edge <= 0:
                fail(
                    f"{t.label}, paytable {paytable!r}, {t.decks} decks: its PAR sheet's house "
                    f"edge is {100 * edge:.4f}%: the wager pays the player on average; check "
                    "the paytable, or set allow_player_edge = True for a deliberate promotion"
                )
            return
        sheet = parsheet.par_sheet(w, t.decks)
        if sheet.house_edge <= 0:
            fail(
                f"{t.label}, paytable {paytable!r}, {t.decks} decks: the exact house edge is "
                f"{100 * float(sheet.house_edge):.4f}% ({sheet.house_edge}): the wager pays "
                "the player on average; check the paytable, or set allow_player_edge = True "
                "for a deliberate promotion"
            )

    def test_deck_limits_honoured(self) -> None:
        """The deck range is within rule 3.3(a) and a table refuses the wager outside it."""
        from feltlab.engine import Table  # pytest11: kept light, loaded by every pytest run
        from feltlab.rules import MAX_DECKS, MIN_DECKS  # pytest11
        from feltlab.shoe import FixedCards  # pytest11: kept light, loaded by every pytest run

        t = self._target()
        lo, hi = t.wager_type.min_decks, t.wager_type.max_decks
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi)):
            fail(f"{t.label}: min_decks and max_decks must be ints, got {lo!r}, {hi!r}")
        if not MIN_DECKS <= lo <= hi <= MAX_DECKS:
            fail(
                f"{t.label}: declares {lo} to {hi} decks; feltlab tables hold {MIN_DECKS} to "
                f"{MAX_DECKS} (rule 3.3(a)): set {MIN_DECKS} <= min_decks <= max_decks <= "
                f"{MAX_DECKS}"
            )
        problems = []
        for d in range(MIN_DECKS, MAX_DECKS + 1):
            rules = t.base_rules.replace(decks=d)
            w = t.instance(None)
            try:
                Table(rules, FixedCards([]), [t.main_type(), w], boxes=1)
                accepted = True
            except RulesError:
                accepted = False
            allowed = lo <= d <= hi
            if accepted and not allowed:
                problems.append(
                    f"a table accepted it with {d} decks outside its range {lo}..{hi}: "
                    "check_rules() must raise RulesError there"
                )
            elif allowed and not accepted:
                problems.append(
                    f"a table refused it with {d} decks inside its range {lo}..{hi}: "
                    "check_rules() must accept every deck count in min_decks..max_decks"
                )
        if problems:
            fail(f"{t.label}: " + "; ".join(problems))

    def test_money_integer_cents(self, paytable: str) -> None:
        """Limits, amounts and every settlement, at stakes across the limits, are integer
        cents (the amounts themselves are the settlement check's)."""
        t = self._target()
        w = t.instance(paytable)
        lim = w.limits
        problems = []
        for field in ("minimum", "maximum", "unit"):
            v = getattr(lim, field)
            if isinstance(v, bool) or not isinstance(v, int):
                problems.append(f"limits.{field} = {v!r} is not integer cents")
        if not problems and lim.minimum % lim.unit:
            problems.append(
                f"limits.minimum {lim.minimum} is not a multiple of the {lim.unit}-cent unit: "
                "no amount at the minimum can be wagered"
            )
        if problems:
            fail(f"{t.label}: " + "; ".join(problems))
        for bad in (lim.minimum + 0.5, float(lim.minimum)):
            try:
                w.check_amount(bad, main_stake=t.rules.min_wager)
            except WagerError:
                continue
            problems.append(f"check_amount() accepted {bad!r}: amounts are integer cents")
        top = lim.maximum - lim.maximum % lim.unit
        mid = lim.minimum + (top - lim.minimum) // 3 // lim.unit * lim.unit
        stakes = sorted({lim.minimum, mid, top})
        if w.round_fields:
            for stake in stakes[1:]:
                _round_settlement(t, paytable, stake, rounds=60)
            return
        for outcome, rows in candidates(t, paytable).items():
            row = rows[0]
            for stake in stakes:
                live = live_round(t, w, row, stake=stake)
                net = live.settlement.net
                if isinstance(net, bool) or not isinstance(net, int):
                    problems.append(
                        f"outcome {w.paytable.outcomes[outcome]!r} at {stake} cents settled net "
                        f"{net!r} ({type(net).__name__}): Settlement.net must be an int of "
                        "cents (use Paytable.net(), or int() of an exact Fraction)"
                    )
                    break
            if len(problems) > 3:
                break
        if problems:
            fail(f"{t.label}, paytable {paytable!r}: " + "; ".join(problems))

    def test_deterministic_for_seed(self, paytable: str, request: pytest.FixtureRequest) -> None:
        """The classifier is a pure function of the cards; a seed fixes every result."""
        t = self._target()
        w = t.instance(paytable)
        rows: Any
        classify: Any
        if w.round_fields:
            from feltlab.conformance.rounds import records  # pytest11

            rows = records(t.spec, paytable, 4096, 2).copy()
            classify = w.classify_round
        else:
            rows = sample_rows(t, paytable, 4096)
            classify = w.classify
        before = rows.copy()
        first = np.asarray(classify(rows)).copy()
        problems = []
        if not np.array_equal(rows, before):
            problems.append(
                "classify() changed the array it was given: never write into `cards` "
                "(work on a copy, e.g. `cards >> 2` rather than `cards >>= 2`)"
            )
        again = np.asarray(classify(before.copy()))
        if not np.array_equal(first, again):
            n = int((first != again).sum())
            problems.append(
                f"classify() gave different outcomes for the same {len(rows)} deals on a second "
                f"call ({n} differ): it must not use randomness or keep state between calls"
            )
        reverse = np.asarray(classify(np.ascontiguousarray(before[::-1])))[::-1]
        if not problems and not np.array_equal(first, reverse):
            problems.append(
                "classify() gave different outcomes when the same deals came in another order: "
                "decide each row from its own cards only"
            )
        if not problems:
            rounds = min(self._rounds(request), 50_000)
            if w.round_fields:
                from feltlab.conformance.rounds import outcome_counts  # pytest11

                ca = outcome_counts(t, paytable, rounds, self.seed)
                cb = outcome_counts(t, paytable, rounds, self.seed)
            else:
                ca = monte_carlo(t, paytable, rounds, self.seed).counts
                cb = monte_carlo(t, paytable, rounds, self.seed).counts
            if ca != cb:
                problems.append(
                    f"two simulations with seed {self.seed} counted different outcomes "
                    f"({ca} vs {cb})"
                )
        if not problems:
            logs = [session_log(t, w, self.seed) for _ in range(2)]
            if logs[0] != logs[1]:
                problems.append(
                    f"two live sessions with seed {self.seed} wrote different event logs: "
                    "settle() must depend on the round's cards only"
                )
        if problems:
            fail(f"{t.label}, paytable {paytable!r}: " + "; ".join(problems))

    def test_protection_summary(self, paytable: str, request: pytest.FixtureRequest) -> None:
        """Game protection: the wager's verdict by count, recorded in the report; a
        countable wager fails when ``allow_countable`` is False."""
        from feltlab.math.counts import resolve_count  # pytest11
        from feltlab.simulation.protection import protect  # pytest11

        t = self._target()
        w = t.instance(paytable)
        specs: list[Any] = []
        try:
            for name in self.protection_counts:
                if name.strip().lower() == "eor":
                    specs.append(lambda x, d=t.decks: resolve_count("eor", x, d))
                else:
                    specs.append(resolve_count(name))
            rep = protect(
                t.rules,
                [w],
                specs,
                self.protection_rounds,
                rules_name=t.rules_name,
                seed=self.seed,
            )
        except FeltlabError as exc:
            fail(f"{t.label}, paytable {paytable!r}: the protection report failed: {exc}")
        lines = [f"{r.count.name}: {r.analysis.verdict}" for r in rep.results]
        lines += [f"not reported: {s.reason}" for s in rep.skipped]
        for line in lines:
            request.node.user_properties.append(("protection", line))
        request.config.stash.setdefault(PROTECTION_KEY, []).extend(
            f"{t.spec.wager} ({paytable}, {t.rules_name}, {rep.rounds:,} rounds a count, seed "
            f"{rep.seed}) {line}"
            for line in lines
        )
        beaten = [r for r in rep.results if r.analysis.countable]
        if beaten and not self.allow_countable:
            r = beaten[0]
            fail(
                f"{t.label}, paytable {paytable!r}: a counter beats it with {r.count.name}: "
                f"{r.analysis.verdict} (allow_countable is False; change the paytable, or "
                "set allow_countable = True and protect the game another way)"
            )


PROTECTION_KEY = pytest.StashKey[list[str]]()
"""Where the run keeps each wager's protection lines for the terminal summary."""


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The "feltlab game protection" section: each checked wager's verdict by count."""
    lines = config.stash.get(PROTECTION_KEY, [])
    if lines:
        terminalreporter.section("feltlab game protection")
        for line in lines:
            terminalreporter.write_line(line)

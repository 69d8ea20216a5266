"""The jackpot prize panel of Madness 21 (rules 15A.7-15A.9, 16.12) as an interface.

The rig supplies the CAN panel; :class:`FakeJackpotPanel` (a seeded prize table) serves tests
and ``feltlab play``; :class:`ReplayPanel` repeats the prizes of an event log.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from feltlab import native
from feltlab.errors import DeviceError, RulesError

EMPLOYEE = "casino employee"
"""The presser when every eligible player declines (rule 15A.9)."""

FAILURE_PAYOUT = 2500
"""Cents paid on a won Madness 21 wager when the equipment fails during the round (rule
16.12: "settled with a $25 payout")."""


@runtime_checkable
class JackpotPanel(Protocol):
    """A jackpot prize display with its prize button."""

    def press(self, round_no: int, box: int, presser: str) -> int:
        """The button was pressed by ``presser`` for ``box``: return the prize displayed, in
        cents (rule 15A.7).  Raise :class:`feltlab.errors.DeviceError` on an electronic
        failure (the engine then applies rule 16.12)."""
        ...


class FakeJackpotPanel:
    """A simulated panel: each press draws a prize from ``prizes`` (``(cents, weight)``
    pairs) with a seeded xoshiro256** generator; ``fail_on`` lists the press numbers (1-based)
    that raise :class:`DeviceError` instead.  Deterministic for a seed."""

    DEFAULT_PRIZES: tuple[tuple[int, int], ...] = (
        (5_000, 60),
        (10_000, 25),
        (25_000, 10),
        (100_000, 4),
        (500_000, 1),
    )
    """An illustrative prize table ($50 to $5,000), not a regulated one (rules 15A.1-15A.6,
    which would set it, are not in the rule files)."""

    def __init__(
        self,
        prizes: Sequence[tuple[int, int]] = DEFAULT_PRIZES,
        *,
        seed: int = 0,
        fail_on: Iterable[int] = (),
    ) -> None:
        if not prizes or any(c <= 0 or w <= 0 for c, w in prizes):
            raise RulesError("prizes must be (cents > 0, weight > 0) pairs, at least one")
        self.prizes = tuple((int(c), int(w)) for c, w in prizes)
        self._rng = native.Xoshiro256StarStar(seed)
        self._fail_on = set(fail_on)
        self.presses = 0

    def press(self, round_no: int, box: int, presser: str) -> int:
        self.presses += 1
        if self.presses in self._fail_on:
            raise DeviceError(
                f"jackpot panel: simulated electronic failure on press {self.presses}"
            )
        total = sum(w for _, w in self.prizes)
        x = int(self._rng.integers(total)[0])
        for cents, weight in self.prizes:
            if x < weight:
                return cents
            x -= weight
        raise AssertionError("unreachable")  # pragma: no cover

    def expected_prize(self) -> float:
        """Mean prize in cents (for a PAR sheet)."""
        total = sum(w for _, w in self.prizes)
        return sum(c * w for c, w in self.prizes) / total


class ReplayPanel:
    """Gives the recorded prizes in order; ``None`` in ``prizes`` replays a failure."""

    def __init__(self, prizes: Iterable[int | None]) -> None:
        self._prizes = list(prizes)

    def press(self, round_no: int, box: int, presser: str) -> int:
        if not self._prizes:
            raise DeviceError("replay: the log has no further jackpot press")
        prize = self._prizes.pop(0)
        if prize is None:
            raise DeviceError("replay: recorded panel failure")
        return prize

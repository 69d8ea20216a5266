"""Entry to a tournament (Division XI rules 3.1, 3.3-3.6): applications, refusals,
withdrawals with or without refund, disqualification and cancellation, and the prize pool
(rule 3.4).  Money is integer cents."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from feltlab.errors import (
    EntryError,
)
from feltlab.tournament.definition import REFUND_NOTICE_DAYS, TournamentDefinition


# ===================================================================== entry (3.1-3.6)
class EntryStatus(StrEnum):
    """Where an application stands."""

    ACCEPTED = "accepted"
    REFUSED = "refused"
    WITHDRAWN = "withdrawn"
    DISQUALIFIED = "disqualified"
    CANCELLED = "cancelled"


@dataclass
class Entrant:
    """One applicant: ``name`` (rule 5.3), the ``fee_paid`` and ``refunded`` cents, and the
    ``status``."""

    name: str
    fee_paid: int
    status: EntryStatus = EntryStatus.ACCEPTED
    refunded: int = 0
    reason: str = ""


class Entry:
    """The entry ledger of one tournament (rules 3.1-3.7).

    Applications are accepted up to ``max_players`` (rule 3.2(e)); the operator may refuse any
    (rule 3.3(a)); a player may withdraw, refunded only at least 7 days before play begins
    (rule 3.5(a)); a disqualified player is never refunded (rule 3.6); before play begins the
    operator may cancel for lack of participation, refunding every fee (rules 3.3(d),
    3.5(b)).  The prize pool is every entry fee kept plus the operator's additions (rule 3.4).

    Assumption: an application the operator refuses is refunded in full (the applicant never
    became a player, so rule 3.5 does not apply to it).
    """

    def __init__(self, definition: TournamentDefinition) -> None:
        self.definition = definition
        self.entrants: dict[str, Entrant] = {}
        self.started = False
        self.cancelled = False

    def _open(self, what: str) -> None:
        if self.cancelled:
            raise EntryError(f"{what}: the tournament was cancelled (rule 3.3(d))")

    def apply(self, name: str, *, accepted_conditions: bool = True) -> Entrant:
        """Accept ``name``'s application and entry fee (rules 3.1, 3.2(b)).  Refused with
        :class:`EntryError` once play has begun, when the field is full (rule 3.2(e)), for a
        name already entered, or when the applicant has not endorsed the conditions (3.7)."""
        self._open("apply")
        if self.started:
            raise EntryError(f"{name!r} applied after play began: entries close at commencement")
        if not name:
            raise EntryError("an applicant gives a name for recording purposes (rule 5.3)")
        if name in self.entrants:
            raise EntryError(f"{name!r} has already applied: each applicant enters once")
        if not accepted_conditions:
            raise EntryError(
                f"{name!r} has not endorsed the conditions of play on the application form "
                "(rule 3.7): have the applicant endorse them"
            )
        if len(self.players) >= self.definition.max_players:
            raise EntryError(
                f"the field is full at entry.max_players={self.definition.max_players} "
                f"(rule 3.2(e)): {name!r} cannot enter"
            )
        e = Entrant(name, self.definition.entry_fee)
        self.entrants[name] = e
        return e

    def _get(self, name: str) -> Entrant:
        try:
            return self.entrants[name]
        except KeyError:
            raise EntryError(f"{name!r} has not applied to this tournament") from None

    def refuse(self, name: str, reason: str = "") -> Entrant:
        """The operator refuses ``name``'s application (rule 3.3(a)); the fee is returned
        (assumption, see the class docstring).  Only before play begins."""
        self._open("refuse")
        e = self._get(name)
        if self.started:
            raise EntryError("applications are refused before play begins (rule 3.3(a))")
        if e.status is not EntryStatus.ACCEPTED:
            raise EntryError(f"{name!r} is {e.status.value}, not an accepted application")
        e.status = EntryStatus.REFUSED
        e.refunded = e.fee_paid
        e.reason = reason or "refused by the operator (rule 3.3(a))"
        return e

    def withdraw(self, name: str, *, days_before: int) -> Entrant:
        """``name`` withdraws ``days_before`` days before play begins: refunded in full when
        that is at least 7 (rule 3.5(a)), else not at all (the fee stays in the pool)."""
        self._open("withdraw")
        e = self._get(name)
        if e.status is not EntryStatus.ACCEPTED:
            raise EntryError(f"{name!r} is {e.status.value} and cannot withdraw")
        e.status = EntryStatus.WITHDRAWN
        if days_before >= REFUND_NOTICE_DAYS and not self.started:
            e.refunded = e.fee_paid
            e.reason = f"withdrew {days_before} days before play (rule 3.5(a): refunded)"
        else:
            e.reason = (
                f"withdrew {days_before} days before play: less than {REFUND_NOTICE_DAYS} "
                "days, no refund (rule 3.5(a))"
            )
        return e

    def disqualify(self, name: str, reason: str) -> Entrant:
        """Disqualify ``name`` (rule 3.3(b): failing to comply with the rules, or to attend at
        a designated playing time); the fee is not refunded (rule 3.6)."""
        e = self._get(name)
        if e.status is not EntryStatus.ACCEPTED:
            raise EntryError(f"{name!r} is {e.status.value}, not a player")
        e.status = EntryStatus.DISQUALIFIED
        e.reason = reason
        return e

    def start(self) -> None:
        """Play begins.  Raises :class:`EntryError` when fewer than ``min_players`` are
        accepted: the operator must :meth:`cancel` (rules 3.2(e), 3.3(d))."""
        self._open("start")
        n = len(self.players)
        if n < self.definition.min_players:
            raise EntryError(
                f"only {n} players entered, fewer than entry.min_players="
                f"{self.definition.min_players}: cancel the tournament (rule 3.3(d))"
            )
        self.started = True

    def cancel(self) -> None:
        """Cancel before play begins for lack of participation (rule 3.3(d)); every fee not
        already refunded is refunded (rule 3.5(b): the tournament does not proceed)."""
        if self.started:
            raise EntryError("a tournament is cancelled only prior to its commencement (3.3(d))")
        n = len(self.players)
        if n >= self.definition.min_players:
            raise EntryError(
                f"{n} players entered, enough for entry.min_players="
                f"{self.definition.min_players}: rule 3.3(d) cancels only for lack of "
                "participation"
            )
        self.cancelled = True
        for e in self.entrants.values():
            e.refunded = e.fee_paid
            if e.status is EntryStatus.ACCEPTED:
                e.status = EntryStatus.CANCELLED
                e.reason = "the tournament did not proceed (rule 3.5(b): refunded)"

    @property
    def players(self) -> list[str]:
        """Accepted players still in the tournament, in order of application."""
        return [n for n, e in self.entrants.items() if e.status is EntryStatus.ACCEPTED]

    @property
    def fees_kept(self) -> int:
        """Entry fees received and not refunded (cents)."""
        return sum(e.fee_paid - e.refunded for e in self.entrants.values())

    @property
    def refunds(self) -> dict[str, int]:
        """Cents refunded to each applicant who was refunded."""
        return {n: e.refunded for n, e in self.entrants.items() if e.refunded}

    @property
    def prize_pool(self) -> int:
        """Every entry fee kept plus the operator's additions, in cents (rule 3.4)."""
        return 0 if self.cancelled else self.fees_kept + self.definition.additions_value

"""feltlab's exception classes: each message names the problem and the fix."""

from __future__ import annotations


class FeltlabError(Exception):
    """Base of every error feltlab raises on purpose."""


class PluginError(FeltlabError):
    """A plugin failed to load or broke the plugin contract; the message names the plugin."""


class SettlementError(PluginError, TypeError):
    """A wager's settlement broke the plugin contract (a :class:`feltlab.wagers.Settlement`'s
    ``detail``, a :class:`feltlab.settlement.HandSettlement`'s fields); the message names the
    field and the fix."""


class RulesError(FeltlabError, ValueError):
    """A :class:`feltlab.Rules` value the NZ rules (or the table's own settings) forbid; the
    message names the field, the rule number and the permitted values.

    ``field`` is the :class:`feltlab.Rules` field at fault where one is (None for a
    combination), so that a front end can name its own option for it (the command line's
    ``--split-hands`` for ``max_split_hands``) instead of the field; ``allowed`` the permitted
    range ``(low, high)`` of a numeric field where it has one."""

    def __init__(
        self, message: str, *, field: str | None = None, allowed: tuple[int, int] | None = None
    ) -> None:
        super().__init__(message)
        self.field = field
        self.allowed = allowed


class WagerError(FeltlabError, ValueError):
    """A wager refused at placement: wrong phase, outside the table's limits, no main wager
    on the box, an unknown wager type, or a wager type the Rules do not permit."""


class IllegalDecisionError(FeltlabError, ValueError):
    """A player decision the Rules or the round's state do not allow; the message names the
    decisions that are legal now."""


class RoundStateError(FeltlabError, RuntimeError):
    """An engine operation called in the wrong phase of the round (e.g. a decision before the
    deal); the message names the phase and the operation expected."""


class ShoeError(FeltlabError, RuntimeError):
    """The card source cannot give a card (exhausted) or was asked for an impossible
    operation; the message says how to fix the shoe set-up."""


class DeviceError(FeltlabError, RuntimeError):
    """A table device (jackpot prize panel, shuffler) failed; the engine turns this into a
    ``device_fault`` event and applies the rule for it (e.g. rule 16.12)."""


class ReplayError(FeltlabError, ValueError):
    """An event log that cannot be replayed, or a replay that diverged from the log; the
    message names the first differing event."""


class TournamentError(FeltlabError, ValueError):
    """A tournament operation Division XI does not allow; the message names the rule and the
    fix."""


class DefinitionError(TournamentError):
    """A tournament definition with a missing or contradictory field.  ``field`` is the dotted
    name of the field (e.g. ``"wagers.maximum"``)."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


class EntryError(TournamentError):
    """An application, withdrawal, refusal, disqualification or cancellation refused
    (rules 3.2(e), 3.3, 3.5, 3.6)."""


class TournamentWagerError(TournamentError):
    """A wager that cannot be accepted at all (not in tournament chips, rule 4.1; on another
    player's box, rule 5.5; on a void box, rule 4.9)."""


def nearest_name(name: str, known: list[str] | tuple[str, ...] | set[str]) -> str | None:
    """The known name closest to a misspelt ``name`` (difflib's ratio >= 0.6), or None: the
    "did you mean" of an error message."""
    import difflib  # start-up: every command imports this module; difflib only on a misspelt name

    near = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=0.6)
    return near[0] if near else None


class InputError(FeltlabError, ValueError):
    """An input file is not what was expected: not a regular file (a FIFO, a device, a
    folder), too large, or unreadable (issue 30); the message names the file and the fix."""


class SchedulerError(FeltlabError, ValueError):
    """A Dask scheduler address Dask cannot parse (``feltlab simulate --scheduler``); the
    message names the address and the forms accepted."""


class CountError(FeltlabError, ValueError):
    """A card count or its analysis cannot be built as asked (an unknown count, tags of the
    wrong length, a resolution out of range, empty tallies); the message names the fix."""

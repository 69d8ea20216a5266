"""One definition of the table-rule options shared by ``feltlab math``, ``simulate`` and
``play`` (click decorators), and the :class:`feltlab.Rules` they build.

``--rules`` names a preset (:data:`feltlab.rules.PRESETS`) or a TOML file of Rules fields
(``to_dict`` names; an optional ``preset = "vegas_s17"`` key gives the base; a file naming no
preset has NZ practice's fields with ``deck_rule = "any"``, 1 to 8 decks); every other
option overrides one field.  An inconsistent combination (an option that has no effect under
the others, or a value the rules refuse) is a one-line usage error naming it.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

import click

from feltlab.errors import InputError, RulesError
from feltlab.inputs import read_text_regular
from feltlab.rules import ANY_MIN_DECKS, PRESETS, HoleCard, Rules

F = TypeVar("F", bound=Callable[..., Any])

_HOLE = {"peek": HoleCard.PEEK, "none": HoleCard.NO_HOLE_CARD}
_TAKES = {"original": "original", "original-and-busted": "original_and_busted", "all": "all"}
NAMES = (
    "rules_spec",
    "decks",
    "h17",
    "double_on",
    "das",
    "split_hands",
    "resplit_aces",
    "hole_card",
    "dbj_takes",
    "surrender",
    "blackjack_pays",
    "penetration",
)


def _options(with_decks: bool, with_penetration: bool = True) -> list[Callable[[F], F]]:
    opts: list[Callable[[F], F]] = [
        click.option(
            "--rules",
            "rules_spec",
            default="nz",
            show_default=True,
            metavar="PRESET|FILE.toml",
            help=f"Rules preset ({', '.join(sorted(PRESETS))}) or a TOML file of Rules fields.",
        ),
    ]
    if with_decks:
        opts.append(
            click.option(
                "--decks",
                type=int,
                default=None,
                help="Decks in the shoe: 1 to 8 (4 to 8 under rule 3.3(a), the nz preset).",
            )
        )
    opts += [
        click.option(
            "--h17/--s17", "h17", default=None, help="Dealer hits (H17) or stands on soft 17."
        ),
        click.option(
            "--double",
            "double_on",
            type=click.Choice(["any", "hard", "9-11", "10-11"]),
            default=None,
            help="Which two-card hands may double.",
        ),
        click.option("--das/--no-das", "das", default=None, help="Double after a split."),
        click.option(
            "--split-hands",
            type=int,
            default=None,
            help="Most hands a box may split into (1: no split, to 4).",
        ),
        click.option(
            "--resplit-aces/--no-resplit-aces", default=None, help="Split aces may be split again."
        ),
        click.option(
            "--hole-card",
            type=click.Choice(["peek", "none"]),
            default=None,
            help="Dealer peeks for blackjack, or no hole card (European).",
        ),
        click.option(
            "--dealer-blackjack-takes",
            "dbj_takes",
            type=click.Choice(sorted(_TAKES)),
            default=None,
            help="Under no hole card: what a dealer blackjack takes.",
        ),
        click.option(
            "--surrender",
            type=click.Choice(["none", "late", "early"]),
            default=None,
            help="Surrender on the first two cards.",
        ),
        click.option(
            "--blackjack-pays",
            default=None,
            metavar="WIN:STAKE",
            help="Odds paid on a blackjack, e.g. 3:2 or 6:5.",
        ),
        click.option(
            "--penetration",
            type=float,
            default=None,
            help="Fraction of the shoe dealt before the cutting card (0.5 to <1).",
        ),
    ]
    return opts if with_penetration else opts[:-1]


MAX_RULES_BYTES = 1 << 20
"""A rules file is a few hundred bytes: a larger one is refused."""


def _load(spec: str) -> tuple[Rules, str]:
    if spec in PRESETS:
        return Rules.preset(spec), spec
    path = Path(spec)
    if spec.endswith(".toml") and not path.exists():
        raise click.BadParameter(
            f"no rules file {spec!r}: give the path of a .toml rules file or a preset "
            f"({', '.join(sorted(PRESETS))})",
            param_hint="--rules",
        )
    if not spec.endswith(".toml") or not path.is_file():
        raise click.BadParameter(
            f"{spec!r} is neither a preset ({', '.join(sorted(PRESETS))}) nor a .toml file",
            param_hint="--rules",
        )
    try:
        text = read_text_regular(path, "rules file", MAX_RULES_BYTES) or ""
        data = tomllib.loads(text)
    except (OSError, InputError, tomllib.TOMLDecodeError) as exc:
        raise click.BadParameter(f"cannot read {spec}: {exc}", param_hint="--rules") from None
    except RecursionError:
        raise click.BadParameter(
            f"cannot read {spec}: nested too deeply to be a rules file", param_hint="--rules"
        ) from None
    base = data.pop("preset", None)
    if base is None:  # a house's own rules: NZ practice fields, any deck count 1 to 8
        data.setdefault("deck_rule", "any")
        base = "nz"
    try:
        return Rules.preset(str(base)).replace(**data), path.name
    except (RulesError, TypeError) as exc:
        raise click.BadParameter(f"{spec}: {exc}", param_hint="--rules") from None


def in_option_terms(exc: RulesError, changes: dict[str, Any], label: str) -> str:
    """The one line of a refused option in the option's own words (``--split-hands 5``, not
    the field ``max_split_hands=5``); a field no option set keeps the field's message, since
    a rules file names the fields themselves."""
    if exc.field not in changes or exc.allowed is None:
        return str(exc)
    low, high = exc.allowed
    value = changes[exc.field]
    if exc.field == "max_split_hands":
        return f"--split-hands {value}: give 1 (no split) to {high}"
    if exc.field != "decks":
        return str(exc)
    reason = f"the {label} rules take {low} to {high} decks"
    if low > ANY_MIN_DECKS and value < low:
        reason += (
            f" (rule 3.3(a)); for {ANY_MIN_DECKS} to {high} decks use --rules vegas_s17 or "
            'vegas_h17, or a rules file with deck_rule = "any"'
        )
    return f"--decks {value}: {reason}"


def build_rules(
    rules_spec: str,
    decks: int | None = None,
    h17: bool | None = None,
    double_on: str | None = None,
    das: bool | None = None,
    split_hands: int | None = None,
    resplit_aces: bool | None = None,
    hole_card: str | None = None,
    dbj_takes: str | None = None,
    surrender: str | None = None,
    blackjack_pays: str | None = None,
    penetration: float | None = None,
) -> tuple[Rules, str]:
    """``(rules, label)`` from the option values (None: not given).  Raises
    :class:`click.UsageError` or :class:`click.BadParameter` with one line naming the
    problem."""
    base, label = _load(rules_spec)
    changes: dict[str, Any] = {}
    if decks is not None:
        changes["decks"] = decks
    if h17 is not None:
        changes["dealer_hits_soft_17"] = h17
    if double_on is not None:
        changes["double_on"] = double_on
    if das is not None:
        changes["double_after_split"] = das
    if split_hands is not None:
        changes["max_split_hands"] = split_hands
    if resplit_aces is not None:
        changes["resplit_aces"] = resplit_aces
    if hole_card is not None:
        changes["hole_card"] = _HOLE[hole_card]
    if dbj_takes is not None:
        changes["dealer_blackjack_takes"] = _TAKES[dbj_takes]
    if surrender is not None:
        changes["surrender"] = surrender
    if blackjack_pays is not None:
        num, sep, den = blackjack_pays.partition(":")
        try:
            pays = Fraction(int(num), int(den)) if sep else None
        except (ValueError, ZeroDivisionError):
            pays = None
        if pays is None or pays <= 0:
            raise click.BadParameter(
                f"{blackjack_pays!r}: write the odds as WIN:STAKE, e.g. 3:2 or 6:5",
                param_hint="--blackjack-pays",
            )
        changes["blackjack_pays"] = pays
    try:
        rules = base.replace(**changes) if changes else base
    except RulesError as exc:
        raise click.UsageError(in_option_terms(exc, changes, label)) from None
    if penetration is not None:
        if not 0 < penetration < 1:
            raise click.BadParameter(
                f"{penetration}: the fraction of the shoe dealt before the cutting card is "
                "between 0 and 1 (e.g. 0.75)",
                param_hint="--penetration",
            )
        behind = round(rules.cards * (1 - penetration))
        from feltlab.core_rules import check_cards_behind  # start-up: --help loads no C core

        try:
            check_cards_behind(behind)
        except RulesError:
            from feltlab.core_rules import MIN_BEHIND_CUT, deepest_penetration  # start-up

            raise click.BadParameter(
                f"{penetration} leaves {behind} cards of the {rules.decks}-deck shoe behind "
                f"the cutting card; the simulator needs {MIN_BEHIND_CUT}: give a penetration "
                f"from 0.5 to {deepest_penetration(rules.cards):g}",
                param_hint="--penetration",
            ) from None
        try:
            rules = rules.replace(cut_card_from_back=behind)
        except RulesError as exc:
            if exc.field != "cut_card_from_back" or exc.allowed is None:
                raise click.BadParameter(
                    f"{penetration}: {exc}", param_hint="--penetration"
                ) from None
            least = 1 - exc.allowed[1] / rules.cards
            raise click.BadParameter(
                f"{penetration}: rule 7.6(a) inserts the cutting card no more than half way in "
                f"from the back: give {least:g} or more",
                param_hint="--penetration",
            ) from None
    if dbj_takes is not None and not rules.no_hole_card:
        raise click.UsageError(
            "--dealer-blackjack-takes applies only with no hole card: add --hole-card none or "
            "drop it (under peek a dealer blackjack ends the round before any double or split)"
        )
    if resplit_aces and rules.max_split_hands < 3:
        raise click.UsageError(
            f"--resplit-aces needs --split-hands 3 or 4 (the rules split to "
            f"{rules.max_split_hands} hands)"
        )
    if das and rules.max_split_hands < 2:
        raise click.UsageError("--das needs splitting: --split-hands 2 to 4")
    return rules, label


def rule_options(*, decks: bool = True, penetration: bool = True) -> Callable[[F], F]:
    """Decorator adding the rule options to a click command; the command receives
    ``rules`` (:class:`feltlab.Rules`) and ``rules_name`` (the preset or file name) instead
    of the option values.  ``decks=False`` leaves ``--decks`` to the command;
    ``penetration=False`` leaves out ``--penetration`` (a command with no cutting card)."""

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            names = NAMES if decks else tuple(n for n in NAMES if n != "decks")
            values = {k: kwargs.pop(k) for k in names if k in kwargs}
            kwargs["rules"], kwargs["rules_name"] = build_rules(**values)
            return f(*args, **kwargs)

        out: Any = wrapper
        for opt in reversed(_options(decks, penetration)):
            out = opt(out)
        return out  # type: ignore[no-any-return]

    return decorate

"""``feltlab math`` for a play-decided wager (exact or simulated) and for a panel-paid one
(Madness 21 with a prize table): the sheets :mod:`feltlab.cli.math` prints."""

from __future__ import annotations

from pathlib import Path

import click

from feltlab.cli.rule_options import in_option_terms
from feltlab.errors import FeltlabError, RulesError
from feltlab.math.parsheet import ParSheet
from feltlab.rules import Rules
from feltlab.wagers import WagerType


def special_sheets(
    wager: WagerType,
    rules: Rules,
    rules_name: str,
    decks: tuple[int, ...],
    profile: str | None,
    stake: int | None,
    rounds: int,
    seed: int,
    *,
    eor: bool = False,
    simulated: bool = False,
) -> list[ParSheet]:
    """The PAR sheets of a play-decided or panel-paid ``wager``, one per deck count
    (``decks``, default: the rules' deck count for a play-decided wager, the wager's range for
    a panel-paid one); ``simulated``: the simulated sheet of a play-decided wager even where an
    exact one exists.  Raises :class:`click.UsageError` with the reason on bad input."""
    from feltlab.math import play_decided, prizes  # start-up: when the command runs

    if eor:
        raise click.UsageError(
            f"--eor covers card-decided wagers and the main wager; {wager.title} is "
            + ("decided by play" if wager.round_fields else "paid by the jackpot panel")
        )
    try:
        if wager.round_fields:
            out = []
            for d in decks or (rules.decks,):
                try:
                    r = rules.replace(
                        decks=d, cut_card_from_back=min(rules.cut_card_from_back, 26 * d)
                    )
                except RulesError as exc:
                    raise click.UsageError(in_option_terms(exc, {"decks": d}, rules_name)) from None
                wager.check_rules(r)
                if simulated:
                    sheet = play_decided.simulated_par_sheet(
                        wager, r, rounds=rounds, seed=seed, rules_name=rules_name
                    )
                else:
                    sheet = play_decided.play_par_sheet(
                        wager, r, rules_name=rules_name, rounds=rounds, seed=seed
                    )
                out.append(sheet)
            return out
        path = Path(profile) if profile else prizes.bundled_panel_profile()
        table = prizes.load_prize_table(path)
        cents = stake if stake is not None else wager.limits.minimum
        counts = list(decks) or list(range(wager.min_decks, wager.max_decks + 1))
        return [
            prizes.jackpot_par_sheet(wager, d, table, stake=cents, source=f"profile {path.name}")
            for d in counts
        ]
    except FeltlabError as exc:
        raise click.UsageError(str(exc)) from None

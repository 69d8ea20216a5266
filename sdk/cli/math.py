"""``feltlab math``: the PAR sheet of a wager, or of the main wager, on the command line."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from feltlab.cli.options import rounds_option, seed_option
from feltlab.cli.rule_options import rule_options
from feltlab.errors import FeltlabError
from feltlab.math.main_wager import Strategy
from feltlab.rules import ANY_MIN_DECKS, MAX_DECKS

if TYPE_CHECKING:
    from feltlab.rules import Rules


@click.command("math")
@click.argument("wager")
@rule_options(decks=False)
@click.option(
    "--decks",
    type=click.IntRange(ANY_MIN_DECKS, MAX_DECKS),
    multiple=True,
    help="Deck count (repeatable); default: the wager's allowed range.",
)
@click.option("--paytable", default=None, help="Paytable name; default: the wager's first.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "md"]),
    default="table",
    show_default=True,
)
@click.option(
    "--strategy",
    type=click.Choice([s.value for s in Strategy]),
    default="cdz",
    show_default=True,
    help="main: the composition-dependent optimum with the post-split play CDZ- (the pre-split "
    "play reused), CDP1 or CDP (E. Farmer's), or the simulator's total-dependent tables.",
)
@click.option(
    "--eor",
    is_flag=True,
    help="Effect of removal per rank, the best linear count and Hi-Lo's betting correlation.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the PAR sheet as JSON (--format json)."
)
@click.option(
    "--profile",
    type=click.Path(dir_okay=False),
    default=None,
    help="Madness 21: the jackpot panel profile whose prize table pays the win "
    "(default: the bundled panel, rig/certify/profiles/jackpot.toml).",
)
@click.option(
    "--stake",
    type=click.IntRange(1, 10**9),
    default=None,
    help="Madness 21: the stake in cents the return per unit is computed at (default: the "
    "wager's minimum).",
)
@rounds_option(
    2_000_000,
    "Rounds of a simulated PAR sheet (a play-decided wager with no exact analysis).",
)
@seed_option(1, "Seed of a simulated PAR sheet, 0..2**64-1.")
@click.option(
    "--simulated",
    is_flag=True,
    help="A play-decided wager: the simulated PAR sheet (--rounds, --seed) even where an exact "
    "one exists, to compare the two.",
)
def math_cmd(
    wager: str,
    rules: Rules,
    rules_name: str,
    decks: tuple[int, ...],
    paytable: str | None,
    fmt: str,
    strategy: str,
    eor: bool,
    as_json: bool = False,
    profile: str | None = None,
    stake: int | None = None,
    rounds: int = 2_000_000,
    seed: int = 1,
    simulated: bool = False,
) -> None:
    """Print the PAR sheet of WAGER: every outcome's combinations, probability, pays and
    return; the return, house edge, hit frequency and standard deviation, and how it was
    computed ("exact", or "simulated: N rounds, +-").

    A card-decided wager: exact enumeration of the initial deals its outcome depends on, over
    the shoe's exact composition.  A play-decided wager (decided by the round record): exact
    when it reads rank-level facts of the dealer's final hand and makes the dealer play out,
    under the rule options; else simulated (--rounds, --seed) with a 95% interval.  WAGER
    "main": the main wager's exact PAR sheet by the C core's combinatorial analyzer
    (--strategy cdz or table).  Madness 21: the win pays the average prize of the panel's
    prize table (--profile) per --stake.
    """
    if as_json:
        fmt = "json"
    if wager == "main":  # the C analyzer's sheet: no plugin is looked for
        from feltlab.cli.render.main_sheet import print_main_sheet  # start-up

        print_main_sheet(rules, rules_name, decks, strategy, fmt, eor=eor)
        return
    from feltlab.cli.render.par_sheets import print_par_sheets  # start-up: when the command runs
    from feltlab.math import parsheet  # start-up: when the command runs
    from feltlab.plugin_manager import collect_wagers, get_plugin_manager  # start-up

    types = collect_wagers(get_plugin_manager())
    if wager not in types:
        raise click.BadParameter(
            f"no wager {wager!r}; installed: {', '.join(types.names())}", param_hint="WAGER"
        )
    cls = types[wager]
    if paytable is not None and not paytable.strip():
        raise click.BadParameter(
            "the paytable name is empty: give one of the wager's paytables, or omit --paytable "
            "for its first",
            param_hint="--paytable",
        )
    try:
        instance = cls(paytable=paytable)
    except FeltlabError as exc:
        raise click.BadParameter(str(exc), param_hint="--paytable") from None
    if instance.round_fields or cls.decided_by_panel:
        from feltlab.cli.math_sheets import special_sheets  # start-up: when the command runs

        sheets = special_sheets(
            instance,
            rules,
            rules_name,
            decks,
            profile,
            stake,
            rounds,
            seed,
            eor=eor,
            simulated=simulated,
        )
    elif not instance.card_roles:
        raise click.UsageError(
            f"{cls.title} is decided by play, not by the initial deal: use "
            f"`feltlab simulate --rules {rules_name}` for its return"
        )
    else:
        counts = list(decks) or list(range(cls.min_decks, cls.max_decks + 1))
        if eor:
            from feltlab.cli.render.main_sheet import print_side_bet_eor  # start-up

            print_side_bet_eor(instance, counts, fmt)
            return
        sheets = [parsheet.par_sheet(instance, d) for d in counts]
    if as_json:
        fmt = "json"
    if fmt != "table":
        from feltlab.cli.render.par_sheets import par_sheets_text  # start-up: when the command runs

        click.echo(par_sheets_text(sheets, fmt), nl=False)
        return
    print_par_sheets(sheets, cls.min_decks, cls.max_decks)

"""The command line's start-up (docs/design.md, "The command line's start-up"): each command's
module is imported only when that command runs, ``feltlab --help`` lists every command, the
plugins' too, from summaries that read exactly as the commands' own help, and ``feltlab math
main`` imports neither the plugins, the rig, rich nor scipy."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from feltlab.cli import BUILTIN_COMMANDS, LazyGroup

# Runs the console script's group in a fresh interpreter, then prints the modules it imported.
IMPORTED = """
import json, sys
from feltlab.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
sys.stdout.flush()
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _imported(args: list[str]) -> tuple[str, set[str]]:
    r = subprocess.run(
        [sys.executable, "-c", IMPORTED, *args], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, set(json.loads(r.stderr.splitlines()[-1]))


def _fresh_group() -> LazyGroup:
    """A group with the built-in commands, the plugins' added (as ``main`` has them), nothing
    imported yet that another test's run of ``main`` imported."""
    group = LazyGroup("feltlab", lazy=BUILTIN_COMMANDS)
    group.list_commands(click.Context(group))  # adds the plugins' commands
    return group


def test_every_summary_reads_as_its_commands_own_short_help() -> None:
    group = _fresh_group()
    lazy = dict(group.lazy)
    assert {"math", "simulate", "protect", "certify", "device", "view"} <= set(lazy)
    for name, entry in lazy.items():
        command = group.get_command(click.Context(group), name)
        assert isinstance(command, click.Command) and command.name == name, entry.target
        stub = click.Command(name, help=entry.summary)
        for limit in range(10, 300):
            assert stub.get_short_help_str(limit) == command.get_short_help_str(limit), (
                f"{name}: the summary in its LazyCommand differs from the first sentence of "
                f"its help at width {limit}: copy the sentence"
            )
    assert not group.lazy  # every command loaded


@pytest.mark.parametrize("width", [80, 200])
def test_help_unimported_is_the_help_of_the_loaded_commands(width: int) -> None:
    group = _fresh_group()
    ctx = click.Context(group)
    before = CliRunner().invoke(group, ["--help"], terminal_width=width, max_content_width=width)
    assert before.exit_code == 0 and group.lazy  # listed without importing
    for name in group.list_commands(ctx):
        group.get_command(ctx, name)
    after = CliRunner().invoke(group, ["--help"], terminal_width=width, max_content_width=width)
    assert before.output == after.output
    assert "math " in before.output and "certify " in before.output


def test_help_imports_no_command_module() -> None:
    out, modules = _imported(["--help"])
    assert "Commands:" in out and " certify " in out and " tournament " in out
    commands = {m for m in modules if m.startswith(("feltlab.cli.", "feltlab.rig.cli."))}
    assert commands == {"feltlab.cli.options", "feltlab.cli.pipe"}
    assert not modules & {"rich", "scipy", "matplotlib", "jinja2", "can", "cantools", "aiohttp"}
    # every wager plugin is imported for its commands; none loads numpy until it classifies
    assert "numpy" not in modules
    # the tournament plugin is loaded, its engine and command are not (issue 37)
    assert "feltlab.plugins.tournament" in modules
    assert not {m for m in modules if m.startswith(("feltlab.tournament", "feltlab.engine"))}
    assert not modules & {"feltlab.plugins.tournament_bots", "feltlab.plugins.tournament_cli"}


def test_a_campaign_command_imports_not_the_planner_nor_the_audit() -> None:
    out, modules = _imported(["certify", "shuffler", "--help"])
    assert "--seed" in out
    assert "feltlab.rig.cli.certify" in modules
    lazy = {"feltlab.rig.cli.plan", "feltlab.rig.cli.csm_audit", "feltlab.rig.explore.cli"}
    assert not modules & (lazy | {"feltlab.rig.certify.power", "feltlab.tournament"})


def test_math_main_imports_no_plugin_no_rig_no_rich() -> None:
    args = ["math", "main", "--rules", "vegas_s17", "--decks", "1", "--split-hands", "1"]
    out, modules = _imported([*args, "--format", "json"])
    assert json.loads(out)["strategy"] == "cdz"
    assert "numpy" in modules  # the analyzer's arrays
    assert not {m for m in modules if m.startswith(("feltlab.plugins", "feltlab.rig"))}
    assert not modules & {"pluggy", "rich", "scipy", "matplotlib", "jinja2", "importlib.metadata"}
    assert {m for m in modules if m.startswith("feltlab.cli.")} == {
        "feltlab.cli.math",
        "feltlab.cli.options",
        "feltlab.cli.pipe",
        "feltlab.cli.rule_options",
        "feltlab.cli.render",
        "feltlab.cli.render.main_sheet",
    }


def test_simulate_main_wager_alone_imports_no_round_engine_nor_table() -> None:
    # issue 37: what `simulate --side-bets none` does not use is not loaded before its first
    # round (the same modules whether its caches are warm or cold)
    args = ["simulate", "--rules", "vegas_s17", "--side-bets", "none", "--rounds", "1000"]
    out, modules = _imported(args)
    assert "vegas_s17: 1,000 rounds, seed 1, cutting card: house edge" in out
    assert "numpy" in modules and "feltlab.simulation.run" in modules
    assert not {m for m in modules if m.startswith(("feltlab.engine", "feltlab.tournament"))}
    assert not modules & {"rich.table", "feltlab.math.play_decided"}


def test_version_reads_the_metadata_only_when_asked() -> None:
    out, _ = _imported(["--version"])
    from feltlab import __version__

    assert out == f"feltlab, version {__version__}\n"
    _, modules = _imported(["math", "--help"])
    assert "importlib.metadata" not in modules


def test_a_command_added_or_lazily_added_replaces_the_other() -> None:
    group = LazyGroup("g", lazy={"info": BUILTIN_COMMANDS["info"]})
    ctx = click.Context(group)
    hello = click.Command("info", callback=lambda: None)
    group.add_command(hello)
    assert group.get_command(ctx, "info") is hello and not group.lazy
    group.add_lazy_command("info", "feltlab.cli.info:info", BUILTIN_COMMANDS["info"].summary)
    assert "info" not in group.commands
    loaded = group.get_command(ctx, "info")
    assert loaded is not hello and loaded is not None and loaded.name == "info"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("feltlab.no_such_module:cmd", "failed to load from feltlab.no_such_module:cmd"),
        ("feltlab.cli:BUILTIN_COMMANDS", "is a dict, not a click command"),
    ],
)
def test_a_command_that_fails_to_load_is_a_one_line_error(target: str, message: str) -> None:
    group = LazyGroup("g")
    group.add_lazy_command("broken", target, "A plugin's broken command.")
    listed = CliRunner().invoke(group, ["--help"]).output
    assert re.search(r"\n  broken +A plugin's broken command\.\n", listed)
    r = CliRunner().invoke(group, ["broken"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.startswith("Error: command 'broken'") and message in r.output


def test_a_plugin_command_never_takes_a_built_in_or_another_plugins_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 41: a plugin's ``math`` command silently replaced feltlab's.  While plugins add
    their commands, a built-in's or an earlier plugin's name is refused; the plugin is named
    in one warning and the built-in command still runs."""
    import feltlab.cli as cli_module

    group = LazyGroup("g", lazy={"info": BUILTIN_COMMANDS["info"]})

    def register(cli: LazyGroup) -> None:
        cli.add_command(click.Command("acme", callback=lambda: None))  # a new name: kept
        for name in ("info", "acme"):
            with pytest.raises(Exception, match=rf"its command '{name}' has the name of"):
                cli.add_command(click.Command(name, callback=lambda: None))
            with pytest.raises(Exception, match=rf"its command '{name}' has the name of"):
                cli.add_lazy_command(name, "x:y", "Hijack.")

    monkeypatch.setattr(cli_module, "_register_plugin_commands", register)
    ctx = click.Context(group)
    assert group.list_commands(ctx) == ["acme", "info"]
    info = group.get_command(ctx, "info")
    assert info is not None and info.callback is not None
    assert info.callback.__module__ == "feltlab.cli.info"  # the built-in, not the plugin's
    # outside plugin registration a caller may still replace a command (the SDK's own use)
    group.add_command(click.Command("info", callback=lambda: None))

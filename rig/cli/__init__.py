"""The rig's command-line commands, added to ``feltlab`` through the
``feltlab_register_commands`` hook (see :mod:`feltlab.rig.plugin`), one module per command:
``feltlab device run KIND --model MODEL --bus SPEC [--profile device.toml]`` runs one simulated
device in this process until interrupted (:mod:`feltlab.rig.cli.device`); ``feltlab capture
decode FILE`` prints a capture's decoded messages and ``feltlab capture record FILE --bus
SPEC`` records a bus (:mod:`feltlab.rig.cli.capture`); ``feltlab certify``
(:mod:`feltlab.rig.cli.certify`); ``feltlab analyze`` (:mod:`feltlab.rig.cli.analyze`);
``feltlab view`` (:mod:`feltlab.rig.live.cli`).  Shared: the options
(:mod:`feltlab.rig.cli.options`), a campaign's directory (:mod:`feltlab.rig.cli.campaign_dir`)
and the rendering of results (:mod:`feltlab.rig.cli.render.terminal`).

This package imports none of them: a command's module is imported when it runs
(``feltlab --help`` lists each by its summary here), so ``feltlab math`` or ``feltlab --help``
never loads the rig's campaign machinery.
"""

from __future__ import annotations

COMMANDS: dict[str, tuple[str, str]] = {
    "device": (
        "feltlab.rig.cli.device:device",
        "Run simulated devices (batch shuffler, continuous shuffler, jackpot panel).",
    ),
    "capture": (
        "feltlab.rig.cli.capture:capture",
        "Record and decode CAN captures (BLF, ASC, candump .log).",
    ),
    "certify": (
        "feltlab.rig.cli.certify:certify",
        "Certification campaigns: collect over CAN, check, report (exit 0 pass, 1 fail, "
        "2 error, 3 inconclusive).",
    ),
    "analyze": (
        "feltlab.rig.cli.analyze:analyze",
        "Re-run every check of a campaign offline from its CAPTURE (a capture-NNN.blf or the "
        "campaign directory).",
    ),
    "station": (
        "feltlab.rig.cli.station:station",
        "A test station: several devices certified at once, each socket's campaign in its "
        "own process and folder (docs/station.md).",
    ),
    "view": (
        "feltlab.rig.live.cli:view",
        "Show a finished or interrupted campaign: its record (record.json), or when none was "
        "written its campaign.json and capture; in the browser with --live.",
    ),
}
"""The rig's commands, in the order ``feltlab_register_commands`` adds them: name ->
(``"module:attribute"`` of the click command, the first sentence of its help, which
``feltlab --help`` shows; tests/test_cli_startup.py checks both)."""

"""The rig's command-line commands, added to ``feltlab`` through the
``feltlab_register_commands`` hook (see :mod:`feltlab.rig.plugin`), one module per command:
``feltlab device run KIND --model MODEL --bus SPEC [--profile device.toml]`` runs one simulated
device in this process until interrupted (:mod:`feltlab.rig.cli.device`); ``feltlab capture
decode FILE`` prints a capture's decoded messages and ``feltlab capture record FILE --bus
SPEC`` records a bus (:mod:`feltlab.rig.cli.capture`); ``feltlab certify``
(:mod:`feltlab.rig.cli.certify`); ``feltlab analyze`` (:mod:`feltlab.rig.cli.analyze`);
``feltlab view`` (:mod:`feltlab.rig.live.cli`).  Shared: the options
(:mod:`feltlab.rig.cli.options`), a campaign's directory (:mod:`feltlab.rig.cli.campaign_dir`)
and the rendering of results (:mod:`feltlab.rig.cli.render`).
"""

from __future__ import annotations

from feltlab.rig.cli import analyze, capture, certify, device
from feltlab.rig.live.cli import view

COMMANDS = (device.device, capture.capture, certify.certify, analyze.analyze, view)
"""The rig's commands, in the order ``feltlab_register_commands`` adds them."""

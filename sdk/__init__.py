"""feltlab: a plugin SDK and hardware-in-the-loop test rig for casino blackjack.

The SDK (this package) holds the card model, rules, round engine, hookspecs, plugin manager,
math and the command line; ``feltlab.plugins`` the built-in wagers; ``feltlab.rig`` the CAN rig;
``feltlab.native`` the C core.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("feltlab")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]

"""The rig's shared command-line options: one definition of ``--bus`` and ``--profile`` for
every rig command (as python-can's ``can/cli.py`` shares its bus options), so that
``device run``, ``capture record``, ``certify`` and ``analyze`` accept the same forms.
``--seed`` and ``--out`` are shared with the core commands (:mod:`feltlab.clitypes`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from feltlab.rig.errors import RigError
from feltlab.rig.transport import DEFAULT_UDP_GROUP, BusSpec

_F = TypeVar("_F", bound=Callable[..., Any])

PROFILE_DIR = Path(__file__).with_name("profiles")

BUS_HELP = (
    "python-can bus as key=value pairs, e.g. "
    f"interface=udp_multicast,channel={DEFAULT_UDP_GROUP} or interface=virtual,channel=rig "
    "(add bitrate=500000 to pace frames)."
)


def bundled_profiles() -> list[str]:
    """The names of the profiles shipped in the package (``rig/profiles/<name>.toml``)."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def resolve_profile(ref: str) -> Path:
    """The file of profile ``ref``: a TOML path, or a bundled profile name (``batch6``,
    ``continuous``, ``jackpot``).  Raises :class:`RigError` naming both forms otherwise."""
    p = Path(ref)
    if p.is_file():
        return p
    bundled = PROFILE_DIR / f"{ref}.toml"
    if not p.suffix and bundled.is_file():
        return bundled
    if p.is_dir():
        raise RigError(f"profile {ref!r} is a folder; give a TOML file or a bundled profile name")
    raise RigError(
        f"no profile {ref!r}: give a TOML file or a bundled profile name "
        f"({', '.join(bundled_profiles())})"
    )


class ProfileRef(click.ParamType):  # type: ignore[type-arg]
    """A device profile: a TOML path or a bundled profile name; converts to the file's path
    as a string."""

    name = "profile"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return str(resolve_profile(str(value)))
        except RigError as exc:
            self.fail(str(exc), param, ctx)


class BusRef(click.ParamType):  # type: ignore[type-arg]
    """A python-can bus spec (``interface=...,channel=...``), checked when the command
    starts; converts to the spec string as given."""

    name = "bus"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            BusSpec.parse(str(value))
        except (RigError, ValueError) as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


def bus_option(*, required: bool = False, default_help: str = "") -> Callable[[_F], _F]:
    """The one ``--bus`` of the rig's commands."""
    return click.option(
        "--bus",
        "bus",
        type=BusRef(),
        required=required,
        default=None,
        help=BUS_HELP + (" " + default_help if default_help else ""),
    )


def profile_option(default_help: str) -> Callable[[_F], _F]:
    """The one ``--profile`` of the rig's commands: a TOML file or a bundled name."""
    return click.option(
        "--profile",
        type=ProfileRef(),
        default=None,
        help="Device profile: a TOML file or a bundled profile name "
        f"({', '.join(bundled_profiles())}). " + default_help,
    )


__all__ = [
    "BUS_HELP",
    "BusRef",
    "ProfileRef",
    "bundled_profiles",
    "bus_option",
    "profile_option",
    "resolve_profile",
]

"""The rig's shared command-line options: one definition of ``--bus`` and ``--profile`` for
every rig command (as python-can's ``can/cli.py`` shares its bus options), so that
``device run``, ``capture record``, ``certify`` and ``analyze`` accept the same forms.
``--seed`` and ``--out`` are shared with the core commands (:mod:`feltlab.cli.options`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from feltlab.rig.bus.transport import DEFAULT_UDP_GROUP
from feltlab.rig.profiles import bundled_profiles, resolve_profile

_F = TypeVar("_F", bound=Callable[..., Any])


BUS_HELP = (
    "python-can bus as key=value pairs, e.g. "
    f"interface=udp_multicast,channel={DEFAULT_UDP_GROUP} or interface=virtual,channel=rig "
    "(add bitrate=500000 to pace frames)."
)


class KindChoice(click.Choice[str]):
    """A device kind: one of the kinds registered, or of the installed plugins, when the
    command runs or shows its help (:func:`feltlab.rig.kinds.available_names`, which imports
    no plugin), so a kind registered by a module of its own is a choice too, and building the
    command line imports no kind.  The kind given is looked up (:func:`feltlab.rig.kinds.
    get_kind`: only its own plugin imported), and an unusable one is named in one line."""

    def __init__(self) -> None:
        super().__init__((), case_sensitive=True)

    @property
    def choices(self) -> tuple[str, ...]:
        from feltlab.rig.kinds import available_names

        return tuple(sorted(available_names()))

    @choices.setter
    def choices(self, value: Any) -> None:
        """Ignored: the choices are the registry's."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from feltlab.rig.kinds import UnknownDeviceKind, get_kind

        try:
            return get_kind(str(value)).name
        except UnknownDeviceKind as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param_hint="KIND") from None


class ProfileRef(click.ParamType):  # type: ignore[type-arg]
    """A device profile: a TOML path or a bundled profile name; converts to the file's path
    as a string (every command then reads it with the same loader checks)."""

    name = "profile"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return str(resolve_profile(str(value)))


class BusRef(click.ParamType):  # type: ignore[type-arg]
    """A python-can bus spec (``interface=...,channel=...``), parsed by
    :meth:`feltlab.rig.bus.transport.BusSpec.parse` when the command opens it."""

    name = "bus"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return str(value)


class Seconds(click.FloatRange):
    """A duration in seconds within ``min..max``: NaN and infinities are refused (click's
    FloatRange lets NaN through, since every comparison with it is false)."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if rv != rv:  # NaN
            self.fail(f"{value!r} is not a number of seconds: give a finite duration", param, ctx)
        return rv


MAX_DURATION = 7 * 86400.0
"""The longest ``--duration`` (seconds): a week."""


def duration_option(default: float | None, help: str) -> Callable[[_F], _F]:
    """The ``--duration`` of ``device run`` and ``capture record``: seconds in
    [0, :data:`MAX_DURATION`]."""
    return click.option(
        "--duration",
        type=Seconds(0, MAX_DURATION),
        default=default,
        show_default=default is not None,
        help=help,
    )


def _bus_given(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    """A required ``--bus``: missing, it is one line with an example (not a traceback)."""
    if value is None:
        raise click.MissingParameter(
            "Give the bus the device is on, e.g. --bus interface=virtual,channel=rig or "
            f"--bus interface=udp_multicast,channel={DEFAULT_UDP_GROUP}",
            ctx=ctx,
            param=param,
        )
    return value


def bus_option(*, required: bool = False, default_help: str = "") -> Callable[[_F], _F]:
    """The one ``--bus`` of the rig's commands.  A required one is checked by its callback
    (:func:`_bus_given`): click (8.3 on) takes an explicit ``default=None`` for a value given,
    so a missing required ``--bus`` reached the command as None (an AttributeError traceback
    in ``BusSpec.parse``)."""
    return click.option(
        "--bus",
        "bus",
        type=BusRef(),
        default=None,
        callback=_bus_given if required else None,
        help=BUS_HELP
        + (" " + default_help if default_help else "")
        + (" [required]" if required else ""),
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
    "MAX_DURATION",
    "BusRef",
    "KindChoice",
    "ProfileRef",
    "Seconds",
    "bus_option",
    "duration_option",
    "profile_option",
]

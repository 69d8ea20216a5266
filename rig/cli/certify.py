"""``feltlab certify``: a certification campaign of one device kind (``shuffler``,
``jackpot-panel``, and a command for every other registered kind), with ``explore`` and
``plan`` added from their stages."""

from __future__ import annotations

import contextlib
import importlib
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from feltlab.cli.options import out_option, seed_option
from feltlab.rig.bus.transport import BusSpec
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.profile_check import MAX_PART_SAMPLES
from feltlab.rig.cli.campaign_dir import new_campaign_dir, refuse_resume_options
from feltlab.rig.cli.options import bus_option, profile_option
from feltlab.rig.cli.render import RichProgress, print_result
from feltlab.rig.errors import RigError
from feltlab.rig.kinds import DeviceKind, get_kind, kinds
from feltlab.rig.live.cli import Live, live_options
from feltlab.seeds import U64_MAX


def _after_verdict(signum: int, frame: Any) -> None:
    """SIGINT once the campaign has returned: its record is complete, so a Ctrl-C right
    after the verdict line neither turns a PASS into exit 1 nor prints a traceback; the
    command ends with the verdict's own exit code (stdout closed quietly if it is gone)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()


def _checked_profile(prof: Any, command: str, size_option: str | None, standard: str | None) -> Any:
    """``prof`` checked against the command and its size option, with ``--standard``'s
    alpha and name in its ``[campaign]`` (recorded with the profile).  Raises RigError."""
    if prof.device_kind.command != command:
        raise RigError(
            f"profile {prof.path} is a {prof.kind} profile, not a "
            f"{command.rsplit('-', 1)[-1]}'s: use certify {prof.device_kind.command}"
        )
    unit = prof.device_kind.unit
    if size_option is not None and size_option != unit:
        raise RigError(
            f"--{size_option} does not apply to a {prof.device_kind.label}, which is "
            f"certified in {unit}: give --{unit}"
        )
    if standard is None:
        return prof
    from dataclasses import replace

    from feltlab.rig.certify.standards import get_standard

    if prof.kind != "batch":
        raise RigError("--standard applies to a batch shuffler's randomness battery")
    try:
        std = get_standard(standard)
    except ValueError as exc:
        raise RigError(str(exc)) from None
    camp = dict(prof.campaign, standard=std.name, alpha=std.alpha)
    return replace(prof, campaign=camp, raw=dict(prof.raw, campaign=camp))


def _run_certify(
    kind: str,
    profile: str | None,
    bus: str | None,
    model: str | None,
    size: int | None,
    alpha: float | None,
    seed: int | None,
    out: str | None,
    resume: str | None,
    faults: str | None = None,
    clock: str | None = None,
    *,
    device_on_host: bool = False,
    live: str | None = None,
    live_linger: float = 0.0,
    as_json: bool = False,
    size_option: str | None = None,
    standard: str | None = None,
) -> None:
    from feltlab.rig.certify.campaign import run_campaign
    from feltlab.rig.certify.collect import CampaignOptions
    from feltlab.rig.certify.profile import load_profile

    command = get_kind(kind).command  # the command certifies the kinds that name it
    stop = threading.Event()
    directory = Path(resume or out or "feltlab-campaigns")
    view: Live | None = None

    def on_sigint(signum: int, frame: Any) -> None:
        if stop.is_set():  # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        stop.set()
        click.echo("\nstopping: finishing the current sample, keeping the capture", err=True)

    try:
        if live is not None:  # a port in use stops the command before any work
            view = Live(live).open()
        if resume is not None:
            directory = Path(resume)
            refuse_resume_options(
                directory,
                command,
                {
                    "--profile": profile,
                    "--bus": bus,
                    "--model": model,
                    f"--{size_option or 'shoes'}": size,
                    "--alpha": alpha,
                    "--seed": seed,
                    "--faults": faults,
                    "--clock": clock,
                    "--device-on-host": device_on_host or None,
                },
            )
            opts = CampaignOptions(load_profile(None, "batch"), directory)
        else:
            prof = _checked_profile(load_profile(profile, kind), command, size_option, standard)
            if bus is not None:
                spec = BusSpec.parse(bus)
                if spec.interface != "slcan":  # a serial adapter is opened once, by the campaign
                    from feltlab.rig.bus.transport import open_bus

                    open_bus(spec).shutdown()  # a bus that cannot open stops here, no campaign
            if model is not None:
                from feltlab.rig.devices.models import parse_model

                parse_model(model)
            directory = Path(out) if out else new_campaign_dir(prof.kind)
            if device_on_host and bus is None:
                raise RigError(
                    "--device-on-host is for a device on --bus; the simulated device of the "
                    "in-process bus is always counted as on this host"
                )
            opts = CampaignOptions(
                prof, directory, bus, model, size, alpha, seed, faults, clock, device_on_host
            )
            opts.clock_mode  # noqa: B018 - refuses --clock sim with --bus before any work
        if view is not None:
            view.set_directory(directory)
        signal.signal(signal.SIGINT, on_sigint)
        try:
            with RichProgress() as bar:
                result = run_campaign(
                    opts,
                    progress=bar,
                    stop=stop,
                    resume=resume is not None,
                    live=view.observer if view is not None else None,
                )
        finally:  # the record is written: a Ctrl-C now only hurries the exit (verdict's code)
            signal.signal(signal.SIGINT, _after_verdict)
    except KeyboardInterrupt:
        if view is not None:
            view.observer.failed("interrupted at once (second Ctrl-C): no record was written")
            view.close(0.0)
        click.echo(
            f"interrupted at once (second Ctrl-C): no record was written; the capture so far "
            f"is in {directory} (a part not closed keeps its journal, "
            f"capture-NNN.journal.log, which analyze and capture decode read); continue "
            f"with feltlab certify {command} "
            f"--resume {directory}",
            err=True,
        )
        sys.exit(2)
    except (RigError, ValueError) as exc:
        if view is not None:
            view.observer.failed(str(exc))
            view.close(0.0)
        if out is None and resume is None and directory.is_dir():
            # a default directory made for a campaign refused before any work: leave none
            with contextlib.suppress(OSError):
                directory.rmdir()  # only if still empty
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:  # the campaign folder cannot be written: a full disk, no rights
        if view is not None:
            view.observer.failed(str(exc))
            view.close(0.0)
        where = exc.filename or directory
        click.echo(
            f"error: cannot write {where}: {exc.strerror or exc}; make room (or choose a "
            f"writable --out) and continue with feltlab certify {command} --resume {directory}",
            err=True,
        )
        sys.exit(2)
    if result.verdict == Verdict.ABORTED:
        click.echo(
            f"interrupted: the record says ABORTED; continue the campaign with "
            f"feltlab certify {command} --resume {directory}",
            err=True,
        )
    print_result(result, as_json=as_json)
    if view is not None:
        sys.stdout.flush()
        linger_stop = threading.Event()
        previous = signal.signal(signal.SIGINT, lambda signum, frame: linger_stop.set())
        try:
            view.close(live_linger, linger_stop)
        finally:
            signal.signal(signal.SIGINT, previous)
    sys.exit(result.exit_code)


_F = TypeVar("_F", bound=Callable[..., Any])

ALPHA_HELP = (
    "Family-wise significance level, 0 < alpha < 1 (Holm across the battery). "
    "Default: the profile's [campaign] alpha, else 0.01."
)

MODEL_HELP = (
    "Simulated batch shuffler model (as `feltlab device run`; the library of "
    "docs/certification.md): fisher-yates (fair), riffle:k=N (N GSR riffles), "
    "shelf:m=N[,passes=P] (an m-shelf shuffler), overhand[:passes=P,cut=PCT], "
    "strip[:cuts=C,passes=P], position-bias[:pos=N,stay=PCT,width=W], or a flawed one: "
    "naive or biased (the naive swap-with-any shuffle), modulo[:bits=B] (rand() % i), "
    "lcg[:shift=S] (an LCG's low bits), short-seed[:bits=S] (2^S distinct shoes), "
    "reboot[:every=N] (the shoes restart every N), stuck[:pos=N] (a card never moves), "
    "missing[:pos=N] (drops a card), duplicate[:pos=N] (duplicates a card). "
    "Default: the profile's [simulation] model."
)


def _certify_options(size_name: str, size_help: str) -> Callable[[_F], _F]:
    def wrap(fn: _F) -> _F:
        opts = [
            profile_option("Default: the bundled simulated device."),
            bus_option(
                default_help="Default: an in-process virtual bus with the simulated device."
            ),
            click.option(
                f"--{size_name}",
                size_name,
                type=click.IntRange(2, MAX_PART_SAMPLES),
                default=None,
                help=size_help + f" At most {MAX_PART_SAMPLES} (16-bit shoe and draw numbers).",
            ),
            click.option(
                "--alpha",
                type=click.FloatRange(0, 1, min_open=True, max_open=True),
                default=None,
                help=ALPHA_HELP,
            ),
            seed_option(None, f"Campaign seed, 0..{U64_MAX} (default: fresh, recorded)."),
            out_option("Campaign directory (must be new or empty)."),
            click.option(
                "--resume",
                default=None,
                type=click.Path(exists=True, file_okay=False),
                help="Continue the interrupted campaign in this directory from its capture.",
            ),
            click.option(
                "--clock",
                type=click.Choice(["sim", "real"]),
                default=None,
                help="sim: the simulated device in simulated time (deterministic: the same "
                "seed gives the same capture and verdicts on any host); real: in the host's "
                "real time. Default: sim on the in-process bus, real on --bus (always).",
            ),
            click.option(
                "--device-on-host",
                is_flag=True,
                default=False,
                help="The device on --bus runs on this same computer (e.g. feltlab device "
                "run): real-time timing verdicts also count this host's scheduling latency "
                "on the device's side (recorded). Never set it for a device on its own "
                "hardware.",
            ),
            click.option(
                "--json", "as_json", is_flag=True, help="Print the verdict and record as JSON."
            ),
        ]
        fn = live_options(fn)
        for o in reversed(opts):
            fn = o(fn)
        return fn

    return wrap


LAZY_SUBCOMMANDS = {
    "explore": "feltlab.rig.explore.cli:explore_command",
    "plan": "feltlab.rig.cli.plan:plan_command",
    "csm-audit": "feltlab.rig.cli.csm_audit:csm_audit_command",
    "rng": "feltlab.rig.cli.rng:rng_command",
    "security": "feltlab.rig.cli.security:security_command",
}
"""``feltlab certify``'s commands that are no campaign, by name: ``"module:attribute"`` of the
click command, imported when it runs or is listed (the planner and the audit import the power
tables and the counted simulator, which a campaign never needs: 0.1-0.2 s of its start)."""


class KindCommands(click.Group):
    """``feltlab certify``: its own commands (those of :data:`LAZY_SUBCOMMANDS` imported on
    first use), then one command for every device kind plugin whose
    :attr:`~feltlab.rig.kinds.DeviceKind.command` is none of them (a vendor's kind installed
    with pip, found through the ``feltlab.rig.kinds`` entry points)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        own = sorted({*super().list_commands(ctx), *LAZY_SUBCOMMANDS})
        extra = {k.command for k in kinds() if k.command not in own}
        return own + sorted(extra)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = LAZY_SUBCOMMANDS.get(cmd_name)
        if target is not None and cmd_name not in self.commands:
            module, _, attr = target.partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        kind = next((k for k in kinds() if k.command == cmd_name), None)
        return None if kind is None else _kind_command(kind)


def _kind_command(kind: DeviceKind) -> click.Command:
    """The certify command of a plugin ``kind``: the common campaign options, ``--<unit>``
    for its sample size, ``--model`` when its simulator takes a shuffle model."""

    def run(**options: Any) -> None:
        _run_certify(
            kind.name,
            options["profile"],
            options["bus"],
            options.get("model"),
            options[kind.unit.replace("-", "_")],
            options["alpha"],
            options["seed"],
            options["out"],
            options["resume"],
            None,
            options["clock"],
            device_on_host=options["device_on_host"],
            live=options["live"],
            live_linger=options["live_linger"],
            as_json=options["as_json"],
        )

    run.__doc__ = f"Certify a {kind.label} (device kind {kind.name!r}, a plugin)."
    fn: Callable[..., None] = _certify_options(kind.unit, f"{kind.unit.capitalize()} to collect.")(
        run
    )
    if kind.models:
        fn = click.option("--model", default=None, help=MODEL_HELP)(fn)
    return click.command(kind.command)(fn)


@click.group(cls=KindCommands)
def certify() -> None:
    """Certification campaigns: collect over CAN, check, report (exit 0 pass, 1 fail, 2 error,
    3 inconclusive)."""


def _run_from_file(
    path: str,
    profile: str | None,
    alpha: float | None,
    seed: int | None,
    out: str | None,
    standard: str | None,
    as_json: bool,
    refused: dict[str, Any],
) -> None:
    """``certify shuffler --from FILE``: shoes from a file, the battery and report
    (:func:`feltlab.rig.certify.from_file.certify_file`); a bad row is one line, exit 2."""
    from feltlab.rig.certify.from_file import certify_file
    from feltlab.rig.certify.profile import load_profile

    given = [name for name, value in refused.items() if value not in (None, False)]
    directory: Path | None = None
    try:
        if given:
            raise RigError(
                f"{', '.join(given)} do(es) not apply to shoes from a file (--from): no bus, "
                "device or collection; give --profile, --alpha or --standard, --seed, --out"
            )
        prof = _checked_profile(load_profile(profile, "batch"), "shuffler", None, standard)
        directory = Path(out) if out else new_campaign_dir(prof.kind)
        with RichProgress() as bar:
            result = certify_file(path, prof, directory, alpha=alpha, seed=seed, progress=bar)
    except (RigError, ValueError) as exc:
        if out is None and directory is not None and directory.is_dir():
            with contextlib.suppress(OSError):
                directory.rmdir()  # a default folder made for a refused file: leave none
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(f"error: cannot write {exc.filename or directory}: {exc.strerror}", err=True)
        sys.exit(2)
    print_result(result, as_json=as_json)
    sys.exit(result.exit_code)


@certify.command("shuffler")
@click.option(
    "--from",
    "from_file",
    default=None,
    metavar="FILE",
    help="Certify the shoes of this file instead of a device (any machine, whatever its "
    "link): one shoe a row, .csv or .jsonl of card codes (0..51), cards (AS, TD, 10H) or card "
    "ids (deck * 52 + code), or a numpy .npy array (shoes, cards); each row a permutation of "
    "the file's decks (docs/certification.md, Shoes from a file).",
)
@click.option(
    "--model",
    default=None,
    help=MODEL_HELP,
)
@click.option(
    "--deals",
    type=click.IntRange(2, MAX_PART_SAMPLES),
    default=None,
    help=f"Continuous shuffler: deals (2..{MAX_PART_SAMPLES}).",
)
@click.option(
    "--faults",
    default=None,
    help="Fault campaign: 'all' or a comma list of stop_heartbeats, silence_mid_transfer, "
    "corrupt_frame, jump_counter, reboot, jam, bus_loss (batch shuffler; overrides the "
    "profile's [faults] inject).",
)
@click.option(
    "--standard",
    default=None,
    help="The regulation the certificate answers to: 25cfr547 (25 CFR 547.14, 99%), comar "
    "(COMAR 36.05.02.17, 95%) or pa810a (58 Pa. Code 810a.5, 95%): sets alpha and the checks "
    "required (docs/certification.md, Standards).",
)
@_certify_options("shoes", "Shoes to collect (batch shuffler; default: the profile's).")
def certify_shuffler(
    from_file: str | None,
    standard: str | None,
    model: str | None,
    faults: str | None,
    deals: int | None,
    profile: str | None,
    bus: str | None,
    shoes: int | None,
    alpha: float | None,
    seed: int | None,
    out: str | None,
    resume: str | None,
    clock: str | None,
    device_on_host: bool,
    as_json: bool,
    live: str | None,
    live_linger: float,
) -> None:
    """Certify a batch or continuous shuffler (the profile's kind).  With no options: the
    bundled simulated 6-deck ChaCha20 batch shuffler on an in-process virtual bus, in
    simulated time."""
    if deals is not None and shoes is not None:
        raise click.UsageError("give --shoes (a batch shuffler) or --deals (a continuous one)")
    if standard is not None and alpha is not None:
        raise click.UsageError("give --standard (which sets alpha) or --alpha, not both")
    if from_file is not None:
        refused = {
            "--bus": bus,
            "--model": model,
            "--shoes": shoes,
            "--deals": deals,
            "--faults": faults,
            "--resume": resume,
            "--clock": clock,
            "--device-on-host": device_on_host,
            "--live": live,
        }
        _run_from_file(from_file, profile, alpha, seed, out, standard, as_json, refused)
    _run_certify(
        "batch",
        profile,
        bus,
        model,
        deals if deals is not None else shoes,
        alpha,
        seed,
        out,
        resume,
        faults,
        clock,
        device_on_host=device_on_host,
        live=live,
        live_linger=live_linger,
        as_json=as_json,
        size_option="deals" if deals is not None else "shoes" if shoes is not None else None,
        standard=standard,
    )


@certify.command("jackpot-panel")
@_certify_options("draws", "Prize draws (default: the profile's).")
def certify_jackpot(
    profile: str | None,
    bus: str | None,
    draws: int | None,
    alpha: float | None,
    seed: int | None,
    out: str | None,
    resume: str | None,
    clock: str | None,
    device_on_host: bool,
    as_json: bool,
    live: str | None,
    live_linger: float,
) -> None:
    """Certify a jackpot prize panel: prize distribution, latency, failure detection and the
    Madness 21 fallback of rule 16.12 through the SDK round engine."""
    _run_certify(
        "jackpot",
        profile,
        bus,
        None,
        draws,
        alpha,
        seed,
        out,
        resume,
        None,
        clock,
        device_on_host=device_on_host,
        live=live,
        live_linger=live_linger,
        as_json=as_json,
    )

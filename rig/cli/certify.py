"""``feltlab certify``: a certification campaign of one device kind (``shuffler``,
``jackpot-panel``, and a command for every other registered kind), with ``explore`` and
``plan`` added from their stages."""

from __future__ import annotations

import contextlib
import functools
import importlib
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from feltlab.cli.options import FiniteRange, out_option, seed_option
from feltlab.rig.bus.transport import BusSpec, open_bus
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.profile_check import MAX_PART_SAMPLES
from feltlab.rig.certify.standards import get_standard
from feltlab.rig.cli.campaign_dir import new_campaign_dir, refuse_resume_options
from feltlab.rig.cli.options import bus_option, profile_option
from feltlab.rig.cli.render.terminal import RichProgress, print_result
from feltlab.rig.devices.models import parse_model
from feltlab.rig.errors import RigError
from feltlab.rig.kinds import DeviceKind, kinds, registered_kinds
from feltlab.rig.live.cli import Live, live_options
from feltlab.seeds import U64_MAX

if TYPE_CHECKING:
    from feltlab.rig.certify.collect import CampaignOptions
    from feltlab.rig.certify.profile import Profile
    from feltlab.rig.certify.record import CampaignResult


def _after_verdict(signum: int, frame: Any) -> None:
    """SIGINT once the campaign has returned: its record is complete, so a Ctrl-C right
    after the verdict line neither turns a PASS into exit 1 nor prints a traceback; the
    command ends with the verdict's own exit code (stdout closed quietly if it is gone)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()


def _checked_profile(
    prof: Profile, command: str, size_option: str | None, standard: str | None
) -> Profile:
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

    if prof.device_kind.unit != SHOE_UNIT:
        raise RigError("--standard applies to a batch shuffler's randomness battery")
    try:
        std = get_standard(standard)
    except ValueError as exc:
        raise RigError(str(exc)) from None
    camp = dict(prof.campaign, standard=std.name, alpha=std.alpha)
    return replace(prof, campaign=camp, raw=dict(prof.raw, campaign=camp))


@dataclass(frozen=True, kw_only=True)
class CertifyRequest:
    """What one ``feltlab certify <command>`` was asked, its options read once from the
    command line (:meth:`from_params`): the command and the kinds that name it (the first's
    bundled profile is the default), the campaign's options and the command's own
    (``live``, ``as_json``, ``from_file``).  ``size_option``: the ``--<unit>`` given (of one
    of the kinds), None when none was."""

    command: str
    kinds: tuple[DeviceKind, ...]
    profile: str | None = None
    bus: str | None = None
    model: str | None = None
    size: int | None = None
    size_option: str | None = None
    alpha: float | None = None
    seed: int | None = None
    out: str | None = None
    resume: str | None = None
    faults: str | None = None
    clock: str | None = None
    device_on_host: bool = False
    standard: str | None = None
    from_file: str | None = None
    live: str | None = None
    live_linger: float = 0.0
    as_json: bool = False

    @classmethod
    def from_params(
        cls, command: str, members: tuple[DeviceKind, ...], params: dict[str, Any]
    ) -> CertifyRequest:
        """The request of ``params`` (click's, by option name).  Raises click.UsageError
        for two sample sizes, or ``--standard`` with ``--alpha``."""
        units = _by_unit(members)
        sizes = {
            k.unit: params[k.unit.replace("-", "_")]
            for k in units
            if params.get(k.unit.replace("-", "_")) is not None
        }
        if len(sizes) > 1:
            given = [f"--{k.unit} (a {k.label})" for k in units if k.unit in sizes]
            raise click.UsageError(f"give {' or '.join(given)}")
        if params.get("standard") is not None and params["alpha"] is not None:
            raise click.UsageError("give --standard (which sets alpha) or --alpha, not both")
        ((size_option, size),) = sizes.items() or ((None, None),)
        own = {f.name for f in fields(cls)} - {"command", "kinds", "size", "size_option"}
        return cls(
            command=command,
            kinds=members,
            size=size,
            size_option=size_option,
            **{k: v for k, v in params.items() if k in own},
        )

    @property
    def size_name(self) -> str:
        """The sample size's option: the one given, else the first kind's."""
        return f"--{self.size_option or self.kinds[0].unit}"


def _checked_new(req: CertifyRequest) -> Profile:
    """A new campaign's profile, loaded and checked against the command; ``--bus`` opened
    once and ``--model`` parsed, so that neither stops a started campaign.  Raises RigError,
    ValueError."""
    from feltlab.rig.certify.profile import load_profile  # start-up: when the command runs

    loaded = load_profile(req.profile, req.kinds[0].name)
    prof = _checked_profile(loaded, req.command, req.size_option, req.standard)
    if req.bus is not None:
        spec = BusSpec.parse(req.bus)
        if spec.interface != "slcan":  # a serial adapter is opened once, by the campaign
            open_bus(spec).shutdown()  # a bus that cannot open stops here, no campaign
    if req.model is not None:
        parse_model(req.model)
        seeding = prof.seeding
        if seeding:  # the seeding replaces the model: the device would not be what --model says
            raise RigError(
                f"--model {req.model} with a profile whose device is seeded ({seeding!r}): its "
                "shuffle is the seeding's; drop --model, or the profile's seeding"
            )
    if req.device_on_host and req.bus is None:
        raise RigError(
            "--device-on-host is for a device on --bus; the simulated device of the "
            "in-process bus is always counted as on this host"
        )
    return prof


def _campaign_options(req: CertifyRequest, prof: Profile, directory: Path) -> CampaignOptions:
    """The new campaign's options, built once, by keyword.  Raises CampaignError for
    ``--clock sim`` with ``--bus``."""
    from feltlab.rig.certify.collect import CampaignOptions  # start-up: when the command runs

    opts = CampaignOptions(
        prof,
        directory,
        bus=req.bus,
        model=req.model,
        size=req.size,
        alpha=req.alpha,
        seed=req.seed,
        faults=req.faults,
        clock=req.clock,
        device_on_host=req.device_on_host,
    )
    opts.clock_mode  # noqa: B018 - refuses --clock sim with --bus before any work
    return opts


def _refuse_resume_options(req: CertifyRequest, directory: Path) -> None:
    """Refuse (RigError) ``--resume`` with an option that would change the campaign, or of a
    campaign another command certifies."""
    refuse_resume_options(
        directory,
        req.command,
        {
            "--profile": req.profile,
            "--bus": req.bus,
            "--model": req.model,
            req.size_name: req.size,
            "--alpha": req.alpha,
            "--seed": req.seed,
            "--faults": req.faults,
            "--clock": req.clock,
            "--device-on-host": req.device_on_host or None,
        },
    )


def _watched(
    start: Callable[..., CampaignResult], view: Live | None, stop: threading.Event
) -> CampaignResult:
    """Run ``start`` (a campaign) with a progress bar, a first Ctrl-C stopping collection
    cleanly (``stop``), a second at once (KeyboardInterrupt)."""

    def on_sigint(signum: int, frame: Any) -> None:
        if stop.is_set():  # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        stop.set()
        click.echo("\nstopping: finishing the current sample, keeping the capture", err=True)

    signal.signal(signal.SIGINT, on_sigint)
    try:
        with RichProgress() as bar:
            return start(progress=bar, stop=stop, live=view.observer if view is not None else None)
    finally:  # the record is written: a Ctrl-C now only hurries the exit (verdict's code)
        signal.signal(signal.SIGINT, _after_verdict)


def _refused(view: Live | None, why: str) -> None:
    """Tell the live view (if any) the campaign failed, and close it."""
    if view is not None:
        view.observer.failed(why)
        view.close(0.0)


def _run_certify(req: CertifyRequest) -> None:
    """Run (or resume) the campaign of ``req`` and exit with its verdict's code (0 pass, 1
    fail, 3 inconclusive), or 2 with one line for bad options, an unwritable folder or a
    second Ctrl-C (each saying how to go on)."""
    from feltlab.rig.certify.campaign import resume_campaign, run_campaign  # start-up

    directory = Path(req.resume or req.out or "feltlab-campaigns")
    view: Live | None = None
    start: Callable[..., CampaignResult]
    try:
        if req.live is not None:  # a port in use stops the command before any work
            view = Live(req.live).open()
        if req.resume is not None:
            _refuse_resume_options(req, directory)
            start = functools.partial(resume_campaign, directory)
        else:
            prof = _checked_new(req)
            directory = Path(req.out) if req.out else new_campaign_dir(prof.kind)
            start = functools.partial(run_campaign, _campaign_options(req, prof, directory))
        if view is not None:
            view.set_directory(directory)
        result = _watched(start, view, threading.Event())
    except KeyboardInterrupt:
        _refused(view, "interrupted at once (second Ctrl-C): no record was written")
        click.echo(
            f"interrupted at once (second Ctrl-C): no record was written; the capture so far "
            f"is in {directory} (a part not closed keeps its journal, "
            f"capture-NNN.journal.log, which analyze and capture decode read); continue "
            f"with feltlab certify {req.command} --resume {directory}",
            err=True,
        )
        sys.exit(2)
    except (RigError, ValueError) as exc:
        _refused(view, str(exc))
        if req.out is None and req.resume is None and directory.is_dir():
            # a default directory made for a campaign refused before any work: leave none
            with contextlib.suppress(OSError):
                directory.rmdir()  # only if still empty
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:  # the campaign folder cannot be written: a full disk, no rights
        _refused(view, str(exc))
        click.echo(
            f"error: cannot write {exc.filename or directory}: {exc.strerror or exc}; make "
            f"room (or choose a writable --out) and continue with feltlab certify "
            f"{req.command} --resume {directory}",
            err=True,
        )
        sys.exit(2)
    _show(req, result, directory, view)


def _show(req: CertifyRequest, result: CampaignResult, directory: Path, view: Live | None) -> None:
    """Print the verdict (and record), linger the live view, exit with the verdict's code."""
    if result.verdict == Verdict.ABORTED:
        click.echo(
            f"interrupted: the record says ABORTED; continue the campaign with "
            f"feltlab certify {req.command} --resume {directory}",
            err=True,
        )
    print_result(result, as_json=req.as_json)
    if view is not None:
        sys.stdout.flush()
        linger_stop = threading.Event()
        previous = signal.signal(signal.SIGINT, lambda signum, frame: linger_stop.set())
        try:
            view.close(req.live_linger, linger_stop)
        finally:
            signal.signal(signal.SIGINT, previous)
    # Python's finalization puts a Python-level SIGINT handler back to SIG_DFL, so a Ctrl-C
    # in the last milliseconds killed the process by the signal (16 of 20 runs, issue 41);
    # SIG_IGN survives finalization: the record is complete, the verdict's code is the exit
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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


FROM_HELP = (
    "Certify the shoes of this file instead of a device (any machine, whatever its "
    "link): one shoe a row, .csv or .jsonl of card codes (0..51), cards (AS, TD, 10H) or card "
    "ids (deck * 52 + code), or a numpy .npy array (shoes, cards); each row a permutation of "
    "the file's decks (docs/certification.md, Shoes from a file)."
)

STANDARD_HELP = (
    "The regulation the certificate answers to: 25cfr547 (25 CFR 547.14, 99%), comar "
    "(COMAR 36.05.02.17, 95%) or pa810a (58 Pa. Code 810a.5, 95%): sets alpha and the checks "
    "required (docs/certification.md, Standards)."
)

FAULTS_HELP = (
    "Fault campaign: 'all' or a comma list of stop_heartbeats, silence_mid_transfer, "
    "corrupt_frame, jump_counter, reboot, jam, bus_loss ({labels}; overrides the "
    "profile's [faults] inject)."
)

SHOE_UNIT = "shoes"
"""The unit of kinds whose sample is a whole shoe: the shoe battery's ``--standard`` and a
file of shoes (``--from``) apply to them."""


def _by_unit(members: tuple[DeviceKind, ...]) -> list[DeviceKind]:
    """The first of ``members`` with each unit, in order (two kinds of one command may share a
    unit, and so its option)."""
    first: dict[str, DeviceKind] = {}
    for k in members:
        first.setdefault(k.unit, k)
    return list(first.values())


def _size_option(kind: DeviceKind) -> Callable[[_F], _F]:
    """``--<unit>``: the sample size of ``kind``."""
    name = kind.unit.replace("-", "_")
    return click.option(
        f"--{kind.unit}",
        name,
        type=click.IntRange(2, MAX_PART_SAMPLES),
        default=None,
        help=f"{kind.unit.capitalize()} to collect ({kind.label}; default: the profile's)."
        f" At most {MAX_PART_SAMPLES} (16-bit shoe and draw numbers).",
    )


def _common_options(members: tuple[DeviceKind, ...]) -> list[Callable[[_F], _F]]:
    """The options of every campaign command, with one ``--<unit>`` for each kind."""
    return [
        profile_option("Default: the bundled simulated device."),
        bus_option(default_help="Default: an in-process virtual bus with the simulated device."),
        *(_size_option(k) for k in _by_unit(members)),
        click.option(
            "--alpha",
            type=FiniteRange(0, 1, min_open=True, max_open=True),
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


def _kind_options(members: tuple[DeviceKind, ...]) -> list[Callable[[_F], _F]]:
    """The options the command's kinds declare: ``--from`` and ``--standard`` for a kind
    whose sample is a shoe, ``--model`` for a simulator that takes a shuffle model,
    ``--faults`` for a kind with fault campaigns."""
    opts: list[Callable[[_F], _F]] = []
    shoes = any(k.unit == SHOE_UNIT for k in members)
    if shoes:
        opts.append(
            click.option("--from", "from_file", default=None, metavar="FILE", help=FROM_HELP)
        )
    if any(k.models for k in members):
        opts.append(click.option("--model", default=None, help=MODEL_HELP))
    faulty = [k.label for k in members if k.fault_campaigns]
    if faulty:
        help_text = FAULTS_HELP.format(labels=", ".join(faulty))
        opts.append(click.option("--faults", default=None, help=help_text))
    if shoes:
        opts.append(click.option("--standard", default=None, help=STANDARD_HELP))
    return opts


def _command_help(members: tuple[DeviceKind, ...]) -> str:
    first = members[0]
    labels = " or ".join(k.label for k in members)
    return (
        f"Certify a {labels} (the profile's kind).  With no options: the bundled simulated "
        f"{first.label} (profile {Path(first.profile).stem}) on an in-process virtual bus, "
        "in simulated time."
    )


def kind_command(command: str, members: tuple[DeviceKind, ...]) -> click.Command:
    """The ``feltlab certify <command>`` of the kinds ``members`` that name it (built-in or a
    vendor's, alike): the common campaign options, ``--<unit>`` for each kind's sample size,
    the options the kinds declare (:func:`_kind_options`) and ``--live``."""

    def run(**params: Any) -> None:
        req = CertifyRequest.from_params(command, members, params)
        if req.from_file is not None:
            _run_from_file(req, params)
        _run_certify(req)

    run.__doc__ = _command_help(members)
    fn: Callable[..., None] = live_options(run)
    for option in reversed([*_kind_options(members), *_common_options(members)]):
        fn = option(fn)
    return click.command(command)(fn)


LAZY_SUBCOMMANDS = {
    "explore": "feltlab.rig.explore.cli:explore_command",
    "plan": "feltlab.rig.cli.plan:plan_command",
    "csm-audit": "feltlab.rig.cli.csm_audit:csm_audit_command",
    "rng": "feltlab.rig.cli.rng:rng_command",
    "predict": "feltlab.rig.cli.predict:predict_command",
    "security": "feltlab.rig.cli.security:security_command",
}
"""``feltlab certify``'s commands that are no campaign, by name: ``"module:attribute"`` of the
click command, imported when it runs or is listed (the planner and the audit import the power
tables and the counted simulator, which a campaign never needs: 0.1-0.2 s of its start)."""


def _campaign_commands(*, every: bool = True) -> dict[str, tuple[DeviceKind, ...]]:
    """Each campaign command and the kinds that name it, in :func:`~feltlab.rig.kinds.kinds`
    order (the built-ins first), but the names of :data:`LAZY_SUBCOMMANDS`; ``every=False``:
    of the kinds registered so far only (the built-ins: no plugin imported)."""
    found: dict[str, tuple[DeviceKind, ...]] = {}
    for k in kinds() if every else registered_kinds():
        if k.command not in LAZY_SUBCOMMANDS:
            found[k.command] = (*found.get(k.command, ()), k)
    return found


class KindCommands(click.Group):
    """``feltlab certify``: its own commands (those of :data:`LAZY_SUBCOMMANDS` imported on
    first use), then one campaign command for each :attr:`~feltlab.rig.kinds.DeviceKind.command`
    of the registered kinds (:func:`kind_command`: feltlab's own kinds and a vendor's kind
    installed with pip, found through the ``feltlab.rig.kinds`` entry points, alike)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_SUBCOMMANDS, *_campaign_commands()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = LAZY_SUBCOMMANDS.get(cmd_name)
        if target is not None and cmd_name not in self.commands:
            module, _, attr = target.partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        # a built-in's command imports no plugin (a vendor's kind that shares it is imported
        # when its profile names it, and takes the command's options); any other command
        # imports the installed plugins, each within its time limit, to find its kinds
        members = _campaign_commands(every=False).get(cmd_name)
        if members is None:
            members = _campaign_commands().get(cmd_name)
        return None if members is None else kind_command(cmd_name, members)


@click.group(cls=KindCommands)
def certify() -> None:
    """Certification campaigns: collect over CAN, check, report (exit 0 pass, 1 fail, 2 error,
    3 inconclusive)."""


def _run_from_file(req: CertifyRequest, params: dict[str, Any]) -> None:
    """``certify <command> --from FILE``: shoes from a file, the battery and report
    (:func:`feltlab.rig.certify.from_file.certify_file`); a bad row is one line, exit 2."""
    from feltlab.rig.certify.from_file import certify_file  # start-up: when the command runs
    from feltlab.rig.certify.profile import load_profile  # start-up: when the command runs

    refused = ["bus", "model", *(k.unit for k in _by_unit(req.kinds)), "faults", "resume"]
    refused += ["clock"]
    refused += ["device-on-host", "live"]
    given = [f"--{n}" for n in refused if params.get(n.replace("-", "_")) not in (None, False)]
    directory: Path | None = None
    try:
        if given:
            raise RigError(
                f"{', '.join(given)} do(es) not apply to shoes from a file (--from): no bus, "
                "device or collection; give --profile, --alpha or --standard, --seed, --out"
            )
        loaded = load_profile(req.profile, req.kinds[0].name)
        prof = _checked_profile(loaded, req.command, None, req.standard)
        directory = Path(req.out) if req.out else new_campaign_dir(prof.kind)
        with RichProgress() as bar:
            result = certify_file(
                str(req.from_file), prof, directory, alpha=req.alpha, seed=req.seed, progress=bar
            )
    except (RigError, ValueError) as exc:
        if req.out is None and directory is not None and directory.is_dir():
            with contextlib.suppress(OSError):
                directory.rmdir()  # a default folder made for a refused file: leave none
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(f"error: cannot write {exc.filename or directory}: {exc.strerror}", err=True)
        sys.exit(2)
    print_result(result, as_json=req.as_json)
    sys.exit(result.exit_code)

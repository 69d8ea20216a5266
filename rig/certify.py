"""Certification campaigns: profile -> bus -> device client -> capture -> checks -> verdicts ->
report (docs/certification.md).

A campaign directory holds ``campaign.json`` (the profile, options and seed, written first),
one capture per collection part (``capture-001.blf``, ``capture-002.blf`` after a resume, ...),
and at the end ``record.json``, ``report.html``, ``junit.xml`` and ``manifest.json``.  Every
verdict is computed from the capture (:func:`analyze_campaign`), so ``feltlab analyze`` reaches
the same verdicts and statistics offline.

Library code: it logs and reports progress through a callback, never prints.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import platform
import secrets
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from feltlab import native
from feltlab.errors import FeltlabError
from feltlab.rig.battery import Verdict
from feltlab.rig.certify_analysis import (
    Analysis,
    analyze_batch,
    analyze_continuous,
    analyze_jackpot,
    guard,
)
from feltlab.rig.certify_capture import CaptureData, read_campaign_capture
from feltlab.rig.certify_faults import (
    FaultPlan,
    FaultRunner,
    fault_plan,
    fault_results,
    fault_windows,
    read_trials,
    shoes_needed,
)
from feltlab.rig.clock import SIM_EPOCH, Clock, RealClock, SimClock
from feltlab.rig.devices import read_profile_toml
from feltlab.rig.errors import (
    DeviceKeyError,
    DeviceLost,
    DeviceRefused,
    LimitExceeded,
    ProfileError,
    RigError,
    SecurityFault,
)
from feltlab.rig.freshness import FRESHNESS_STARTS, FreshnessStore, freshness_starts
from feltlab.rig.measures import Measurement
from feltlab.rig.profile_check import MAX_PART_SAMPLES, check_profile
from feltlab.rig.protocol import Result
from feltlab.rig.report import RECORD_VERSION, make_plots, write_report
from feltlab.rig.secoc import DeviceKey, load_key
from feltlab.rig.uncertainty import HostUncertainty, combine, read_calibrations
from feltlab.seeds import SEED_DERIVATION_VERSION, U64_MAX
from feltlab.seeds import part_seed as part_seed  # the device seed of a part, re-exported

log = logging.getLogger(__name__)

PART_SPACING = 1_000_000.0
"""Simulated seconds between the starts of two collection parts (11.6 days)."""

PROFILE_DIR = Path(__file__).with_name("profiles")
BUNDLED = {"batch": "batch6", "continuous": "continuous", "jackpot": "jackpot"}
"""The bundled default profile of each device kind (``rig/profiles/<name>.toml``)."""

EXIT_CODES = {Verdict.PASS: 0, Verdict.FAIL: 1, Verdict.INCONCLUSIVE: 3}
"""Exit code of a verdict; anything else (ERROR, ABORTED) is 2."""


class CampaignError(RigError):
    """A campaign cannot start or continue (bad profile, bad options, nothing to resume)."""


class Progress(Protocol):
    """What a campaign reports its progress to (the CLI draws a rich progress bar)."""

    def start(self, description: str, total: int | None) -> None: ...

    def advance(self, n: int = 1) -> None: ...


class _NoProgress:
    def start(self, description: str, total: int | None) -> None:
        log.info("%s (%s)", description, total)

    def advance(self, n: int = 1) -> None:
        pass


# ===================================================================== profiles


@dataclass(frozen=True)
class Profile:
    """A device profile (TOML; fields in docs/certification.md): what the device declares
    (``device``: kind, name, base, decks, bitrate, heartbeat period, prize table, slots),
    the timing ``limits`` (seconds), the ``campaign`` plan, and ``simulation`` options used only
    when feltlab starts the simulated device.  ``path`` is None for a profile read from a
    campaign record."""

    kind: str
    name: str
    device: dict[str, Any]
    limits: dict[str, float]
    campaign: dict[str, Any]
    simulation: dict[str, Any]
    raw: dict[str, Any]
    path: str | None = None

    @property
    def base(self) -> int:
        from feltlab.rig.protocol import DEFAULT_BASE

        return int(self.device.get("base", DEFAULT_BASE[self.kind]))

    @property
    def heartbeat_period(self) -> float:
        return float(self.device.get("heartbeat_period", 0.1))

    @property
    def authenticate(self) -> bool:
        """The profile requires authenticated jackpot results (``authenticate = true``)."""
        return bool(self.device.get("authenticate", False))

    def key(self) -> DeviceKey | None:
        """The device's key (``key`` hex, or ``key_file`` relative to the profile's folder;
        named by ``key_id``), or None.  Raises :class:`CampaignError` when the profile
        requires authentication without a key, or the key is bad (naming its id, never
        the key)."""
        base_dir = Path(self.path).parent if self.path else None
        if self.device.get("key") == REDACTED:
            raise CampaignError(
                "the campaign's profile had an inline key, which is never written to the "
                "campaign directory: give the profile with the key (--profile), or use "
                "key_file, to resume or analyse it"
            )
        try:
            key = load_key(self.device, base_dir)
        except DeviceKeyError as exc:
            raise CampaignError(f"{self.path or 'profile'}: [device] {exc}") from exc
        if key is None and self.authenticate:
            raise CampaignError(
                f"{self.path or 'profile'}: [device] authenticate = true needs the panel's "
                "key: key (hex digits) or key_file, with key_id"
            )
        return key

    @property
    def key_id(self) -> str | None:
        """The public id of the device's key (never the key), or None."""
        if "key" not in self.device and "key_file" not in self.device:
            return None
        return str(
            self.device.get("key_id")
            or (Path(str(self.device["key_file"])).name if "key_file" in self.device else None)
            or "profile"
        )

    def device_options(self, *, simulated: bool) -> dict[str, Any]:
        """Options for :func:`feltlab.rig.devices.make_device` (the key as a DeviceKey)."""
        skip = ("kind", "name", "description", "authenticate", "key", "key_file", "key_id")
        opts = {k: v for k, v in self.device.items() if k not in skip}
        if simulated:
            opts.update(self.simulation)
        if self.kind == "jackpot":
            key = self.key()
            if key is not None:
                opts["key"] = key
        return opts

    def to_dict(self) -> dict[str, Any]:
        """The profile for records and ``campaign.json``: every secret, wherever it sits in
        the profile (a ``key``, ``secret``, ``password`` or ``token`` field, or one ending in
        ``_key``, in any table) is redacted (only ``key_id`` is shown); a ``key_file`` is
        kept as an absolute path."""
        raw = redact_secrets(dict(self.raw))
        dev = raw.get("device")
        if isinstance(dev, dict) and ("key" in dev or "key_file" in dev):
            dev = dict(dev)
            if "key" in dev:
                dev["key"] = REDACTED
            if "key_file" in dev and self.path:
                dev["key_file"] = str((Path(self.path).parent / str(dev["key_file"])).resolve())
            raw["device"] = dev
        return {"path": self.path, "name": self.name, "kind": self.kind, "data": raw}


REDACTED = "(redacted: see key_id)"

_SECRET_FIELDS = ("key", "secret", "password", "passphrase", "token")


def _is_secret_field(name: str) -> bool:
    low = name.lower()
    return low in _SECRET_FIELDS or low.endswith(tuple("_" + f for f in _SECRET_FIELDS))


def redact_secrets(obj: Any) -> Any:
    """``obj`` (tables, arrays, values of a profile) with every secret field's value
    replaced by :data:`REDACTED`, at any depth."""
    if isinstance(obj, dict):
        return {
            k: REDACTED if isinstance(k, str) and _is_secret_field(k) else redact_secrets(v)
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [redact_secrets(v) for v in obj]
    return obj


def profile_from_dict(data: dict[str, Any], path: str | None = None) -> Profile:
    """A :class:`Profile` from parsed TOML.  Raises :class:`CampaignError` naming the field."""
    where = path or "profile"
    dev = data.get("device")
    if not isinstance(dev, dict):
        raise CampaignError(f"{where}: needs a [device] table (see docs/certification.md)")
    kind = dev.get("kind")
    if kind not in BUNDLED:
        raise CampaignError(
            f"{where}: [device] kind must be one of {', '.join(BUNDLED)}, got {kind!r}"
        )
    for table in ("campaign", "simulation", "faults"):
        if table in data and not isinstance(data[table], dict):
            raise CampaignError(
                f"{where}: [{table}] must be a table (a [{table}] section), "
                f"got {type(data[table]).__name__} {data[table]!r}"
            )
    try:
        check_profile(where, data)
    except ProfileError as exc:
        raise CampaignError(str(exc)) from None
    limits = data.get("limits", {})
    if not isinstance(limits, dict) or not all(
        isinstance(v, int | float) and v >= 0 for v in limits.values()
    ):
        raise CampaignError(f"{where}: [limits] must map names to non-negative seconds")
    return Profile(
        kind=str(kind),
        name=str(dev.get("name", f"{kind} device")),
        device=dict(dev),
        limits={k: float(v) for k, v in limits.items()},
        campaign=dict(data.get("campaign", {})),
        simulation=dict(data.get("simulation", {})),
        raw=data,
        path=path,
    )


def load_profile(ref: str | Path | None, kind: str = "batch") -> Profile:
    """The profile at path ``ref``, or the bundled profile named ``ref`` (``batch6``,
    ``continuous``, ``jackpot``), or (``ref`` None) the bundled default of ``kind``.

    Raises :class:`CampaignError` for a missing or malformed file.
    """
    if ref is None:
        ref = BUNDLED[kind]
    p = Path(ref)
    if not p.exists() and (PROFILE_DIR / f"{ref}.toml").exists():
        p = PROFILE_DIR / f"{ref}.toml"
    names = ", ".join(sorted(x.stem for x in PROFILE_DIR.glob("*.toml")))
    data = read_profile_toml(
        p, error=CampaignError, hint=f"; give a TOML file or a bundled profile name ({names})"
    )
    return profile_from_dict(data, str(p))


def quick_profile(
    kind: str = "batch",
    *,
    faults: dict[str, Any] | None = None,
    power_replicates: int = 3,
    null_replicates: int | None = None,
    **device: Any,
) -> Profile:
    """The bundled profile of ``kind`` made quick, for tests and dry runs: unpaced (no
    bitrate), with ``power_replicates`` (and ``null_replicates``) simulations; ``device``
    overrides [device] fields and ``faults`` sets a fault plan."""
    prof = load_profile(None, kind)
    dev = {k: v for k, v in prof.device.items() if k != "bitrate"}
    dev.update(device)
    camp = dict(prof.campaign, power_replicates=power_replicates)
    if null_replicates is not None:
        camp["null_replicates"] = null_replicates
    raw = dict(prof.raw, device=dev, campaign=camp)
    if faults is not None:
        raw["faults"] = faults
    return replace(prof, device=dev, campaign=camp, raw=raw)


# ===================================================================== options and directory


@dataclass(frozen=True)
class CampaignOptions:
    """What ``feltlab certify`` was asked: the profile, the bus (None: an in-process virtual
    bus with the simulated device), the simulated model (None: the profile's; with a bus and
    no model, no device is started), the sample size (shoes, deals or draws; None: the
    profile's), alpha, the seed (None: fresh) and the output directory.

    ``clock``: ``"sim"`` runs the simulated device in simulated time on the in-process bus (a
    deterministic discrete-event schedule: the campaign is a pure function of its seed),
    ``"real"`` in the host's real time; None chooses ``"sim"`` for a simulated device on the
    in-process bus and ``"real"`` for any device on an external ``bus``, which is always
    certified in real time.
    """

    profile: Profile
    out: Path
    bus: str | None = None
    model: str | None = None
    size: int | None = None
    alpha: float | None = None
    seed: int | None = None
    faults: str | None = None
    clock: str | None = None

    @property
    def simulated(self) -> bool:
        return self.bus is None or self.model is not None

    @property
    def clock_mode(self) -> str:
        """``"sim"`` or ``"real"`` (see the class docstring). Raises CampaignError for a
        simulated clock asked of an external bus, or an unknown mode."""
        mode = self.clock or ("sim" if self.bus is None else "real")
        if mode not in ("sim", "real"):
            raise CampaignError(f"--clock must be sim or real, got {mode!r}")
        if mode == "sim" and self.bus is not None:
            raise CampaignError(
                "simulated time drives only the in-process bus; a device on --bus is "
                "certified in real time (--clock real)"
            )
        return mode

    def new_clock(self, part: int = 1) -> Clock:
        """A new clock of :attr:`clock_mode` for collection part ``part``.  Simulated parts
        follow each other on the wall clock: part ``p`` starts ``(p - 1) * 10**6`` simulated
        seconds after 2000-01-01, so a resumed campaign's parts never overlap in time."""
        if self.clock_mode == "real":
            return RealClock("campaign")
        return SimClock(epoch=SIM_EPOCH + (part - 1) * PART_SPACING)


SIZE_KEY = {"batch": "shoes", "continuous": "deals", "jackpot": "draws"}


def _capture_paths(out: Path) -> list[Path]:
    return sorted(out.glob("capture-[0-9][0-9][0-9].blf"))


def recover_captures(out: Path) -> list[str]:
    """Rebuild every capture part left unfinished by a crash (kill -9, power loss) from its
    journal (:func:`feltlab.rig.capture.recover_capture`); returns the parts recovered."""
    from feltlab.rig.capture import JOURNAL_SUFFIX, recover_capture

    done = []
    for j in sorted(out.glob(f"capture-[0-9][0-9][0-9]{JOURNAL_SUFFIX}")):
        blf = j.with_name(j.name[: -len(JOURNAL_SUFFIX)] + ".blf")
        n = recover_capture(blf)
        log.warning("%s: rebuilt from its journal (%s frames) after a crash", blf.name, n)
        done.append(blf.name)
    return done


def software_versions() -> dict[str, Any]:
    """Versions of feltlab, Python and the libraries a verdict depends on."""
    out: dict[str, Any] = {"python": platform.python_version()}
    for dist in ("feltlab", "numpy", "scipy", "python-can", "cantools", "can-isotp"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:  # pragma: no cover - always installed
            out[dist] = None
    try:
        out["core"] = native.core_info()
    except Exception:  # pragma: no cover - informational
        out["core"] = None
    return out


# ===================================================================== collection


@dataclass
class Collected:
    """What a collection part did: shoes requested and received, or why it stopped."""

    requested: int = 0
    done: int = 0
    missing: list[tuple[int, str]] = field(default_factory=list)
    aborted: bool = False
    error: str | None = None
    online: dict[str, int] = field(default_factory=dict)
    #: (clock time in s, error) of each scheduled callback that raised (a device or rig bug)
    crashes: list[tuple[float, str]] = field(default_factory=list)
    #: the host node's bus counters: frames, receive errors (undecodable input refused),
    #: listener and capture-writer errors (:meth:`feltlab.rig.transport.Node.stats`)
    bus: dict[str, Any] = field(default_factory=dict)
    #: replies the client discarded as answering no request in flight (protocol 2.0)
    stale_replies: int = 0
    #: declared limits the device went beyond: (what, value s, limit s, message); a FAIL
    limits_exceeded: list[tuple[str, float, float, str]] = field(default_factory=list)


def freshness_store(prof: Profile) -> FreshnessStore:
    """The lab's freshness state for ``prof``'s panel: ``[campaign] freshness_state`` or the
    default location (:mod:`feltlab.rig.freshness`)."""
    where = prof.campaign.get("freshness_state")
    return FreshnessStore(Path(str(where)).expanduser() if where else None)


def _open(
    opts: CampaignOptions, capture: Path, part: int, seed: int, clock: Clock
) -> tuple[Any, Any, str]:
    """Start the simulated device (if any) and the client on ``clock``; returns (device,
    client, spec)."""
    from feltlab.rig.clients import CLIENT_KINDS
    from feltlab.rig.devices import make_device

    prof = opts.profile
    spec = opts.bus
    if spec is None:
        rate = prof.device.get("bitrate")
        spec = f"interface=virtual,channel=feltlab-certify-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        if rate:
            spec += f",bitrate={int(rate)}"
    dev = None
    key = prof.key() if prof.kind == "jackpot" else None
    last_fv = freshness_store(prof).last(key) if key is not None else 0
    if opts.simulated:
        dev_opts = prof.device_options(simulated=True)
        extra: dict[str, Any] = {"seed": part_seed(seed, part)}
        if key is not None:  # the simulated panel's non-volatile draw count
            extra["draws"] = last_fv
        if opts.model is not None:
            if prof.kind != "batch":
                raise CampaignError(f"--model applies to batch shufflers, not {prof.kind}")
            extra["model"] = opts.model
        dev = make_device(prof.kind, spec, dev_opts, clock=clock, **extra).start()
    kw: dict[str, Any] = {}
    if key is not None:
        kw = {"key": key, "require_auth": prof.authenticate, "freshness": last_fv}
        starts = freshness_starts(capture.parent)
        starts[part] = last_fv
        (capture.parent / FRESHNESS_STARTS).write_text(json.dumps(starts, sort_keys=True))
    try:
        client = CLIENT_KINDS[prof.kind](
            spec,
            base=prof.base,
            timeout=float(prof.campaign.get("timeout", 0.5)),
            capture=capture,
            heartbeat_period=prof.heartbeat_period,
            clock=clock,
            limits=prof.limits,
            **kw,
        )
    except BaseException:
        if dev is not None:
            dev.stop()
        raise
    return dev, client, spec


def collect_part(
    opts: CampaignOptions,
    directory: Path,
    part: int,
    seed: int,
    want: int,
    *,
    progress: Progress,
    stop: threading.Event,
    have: int = 0,
    live: Any = None,
) -> Collected:
    """Collect ``want`` more samples (shoes, deals or draws) into ``capture-<part>.blf``.
    Stops cleanly (capture flushed) when ``stop`` is set; device errors end the part with
    ``error`` set.  ``live``: an optional :class:`feltlab.rig.live.CampaignObserver`."""
    capture = directory / f"capture-{part:03d}.blf"
    result = Collected(requested=want)
    dev = client = None
    runner: FaultRunner | None = None
    clock = opts.new_clock(part)
    try:
        dev, client, _spec = _open(opts, capture, part, seed, clock)
        if live is not None:
            live.attach(client, dev, clock)
            progress = live.progress(progress)
        hb = client.wait_online(float(opts.profile.campaign.get("online_timeout", 3.0)))
        result.online = {k: int(v) for k, v in hb.signals.items()}
        kind = opts.profile.kind
        plan = campaign_fault_plan(opts.profile, opts.faults)
        if plan is not None:
            done = [t["fault"] for t in read_trials(directory)]
            earlier = [directory / f"capture-{p:03d}.blf" for p in range(1, part)]
            previous = read_campaign_capture(earlier, opts.profile.base).shoes if have else []
            runner = FaultRunner(
                plan, client, want, directory, have=have, done=done, previous=previous
            )
        if kind == "batch":
            _collect_batch(opts, client, want, result, progress, stop, runner)
        elif kind == "continuous":
            _collect_continuous(opts, client, want, result, progress, stop)
        else:
            _collect_jackpot(opts, client, want, result, progress, stop, directory, part)
        _wait_heartbeats(client, opts.profile.heartbeat_period, stop)
    except KeyboardInterrupt:
        result.aborted = True
    except LimitExceeded as exc:  # the device went beyond its declared limits: a FAIL
        result.limits_exceeded.append((exc.what, exc.value, exc.limit, str(exc)))
        log.error("collection stopped: %s", exc)
    except FeltlabError as exc:  # a rig error, or the SDK's (a withdrawn Madness 21 wager)
        result.error = str(exc)
        log.error("collection stopped: %s", exc)
    finally:
        if runner is not None and runner.pending:
            runner.after_sample(stopped=True, limits=opts.profile.limits)
        if live is not None and client is not None:
            live.detach(result.done, result.missing)
        if client is not None:
            key = getattr(client, "_key", None)
            if key is not None and client.freshness:
                freshness_store(opts.profile).remember(key, client.freshness)
            result.bus = client.node.stats()
            result.stale_replies = client.stale_replies
            client.close()  # flushes the capture
        if dev is not None:
            dev.stop()
        clock.close()
        if capture.exists():
            record_part(directory, part, capture)
        result.crashes = list(getattr(clock, "crashes", []))
        if result.crashes and result.error is None:
            result.error = f"the rig failed during collection: {result.crashes[0][1]}"
    if stop.is_set():
        result.aborted = True
    return result


MIN_HEARTBEATS = 4
"""Heartbeats a part waits for before it closes (at most ``MIN_HEARTBEATS + 2`` periods),
so that ``heartbeat.period`` is measurable even from the smallest campaigns."""


def _wait_heartbeats(client: Any, period: float, stop: threading.Event) -> None:
    client.clock.wait(
        lambda: client.counts.get("Heartbeat", 0) >= MIN_HEARTBEATS or stop.is_set(),
        (MIN_HEARTBEATS + 2) * period,
    )


def campaign_fault_plan(prof: Profile, override: str | None) -> FaultPlan | None:
    """The fault plan of a campaign (profile ``[faults]``, ``--faults``), or None.  Raises
    :class:`CampaignError` for a bad plan or a device kind without fault campaigns."""
    try:
        plan = fault_plan(prof.raw.get("faults"), override)
    except ValueError as exc:
        raise CampaignError(str(exc)) from exc
    if plan is not None and prof.kind != "batch":
        raise CampaignError(
            f"fault campaigns drive batch shufflers in this version, not {prof.kind} devices "
            "(a jackpot panel's campaign injects its own faults: inject_faults)"
        )
    return plan


def _wait_back(client: Any, timeout: float) -> bool:
    """Wait (bounded) until a lost device sends heartbeats again."""
    client.clock.wait(lambda: not client.lost, timeout)
    return not client.lost


def _collect_batch(
    opts: CampaignOptions,
    client: Any,
    want: int,
    result: Collected,
    progress: Progress,
    stop: threading.Event,
    faults: FaultRunner | None = None,
) -> None:
    """Collect ``want`` shoes.  A shoe that fails is collected again: after a lost device
    comes back (within the plan's recovery timeout, else the part stops with an error),
    after a refused SHUFFLE (the fault is cleared) and after a failed read; after a reboot
    the input order is loaded again."""
    decks = int(opts.profile.device.get("decks", 6))
    loaded = native.new_shoe(decks, ids=True)
    l_codes, l_decks = (loaded % 52).astype(np.uint8), (loaded // 52).astype(np.uint8)
    client.load(l_codes, l_decks)
    every = max(1, int(opts.profile.campaign.get("ping_every", 1)))
    back_timeout = faults.plan.recovery_timeout if faults else 5.0

    def rebooted() -> int:
        return sum(1 for e in list(client.events) if e.kind == "reboot")

    reboots = rebooted()
    progress.start("collecting shoes", want)
    for i in range(want):
        if stop.is_set():
            break
        if faults is not None:
            faults.before_sample(i)
        last = ""
        for _attempt in range(4):
            try:
                if rebooted() != reboots:  # a rebooted shuffler forgot its input order
                    reboots = rebooted()
                    client.load(l_codes, l_decks)
                number = client.shuffle()
                shoe = client.read_shoe(number)
            except DeviceLost as exc:
                last = str(exc)
                if not _wait_back(client, back_timeout):
                    raise DeviceLost(
                        f"{exc}; not back within {back_timeout:.1f} s: the campaign stops"
                    ) from exc
                continue
            except DeviceRefused as exc:
                last = str(exc)
                if exc.result == Result.BUSY:  # e.g. still booting: give it a moment
                    client.clock.sleep(min(0.05 * 2**_attempt, float(client.timeout)))
                    continue
                with contextlib.suppress(RigError):
                    client.clear_fault()
                continue
            except LimitExceeded:
                raise  # retrying cannot help: the device announced more than it declared
            except RigError as exc:
                last = str(exc)
                continue
            result.done += 1
            if faults is not None:
                faults.shoe_collected(shoe.codes, shoe.card_decks)
            break
        else:
            result.missing.append((i, last))
            if len(result.missing) > max(10, want // 10):
                raise RigError(f"{len(result.missing)} shoes not received; the last: {last}")
        if faults is not None and faults.pending:
            faults.after_sample(limits=opts.profile.limits)
        if i % every == 0:
            if faults is None:
                client.ping()
            else:
                with contextlib.suppress(RigError):
                    client.ping()
        if i % 100 == 99 and client.node.capture is not None:
            client.node.capture.sync()
        progress.advance()


def _collect_continuous(
    opts: CampaignOptions,
    client: Any,
    want: int,
    result: Collected,
    progress: Progress,
    stop: threading.Event,
) -> None:
    decks = int(opts.profile.device.get("decks", 6))
    ids = native.new_shoe(decks, ids=True)
    client.load((ids % 52).astype(np.uint8), (ids // 52).astype(np.uint8))
    every = max(1, int(opts.profile.campaign.get("ping_every", 10)))
    progress.start("dealing and returning cards", want)
    for i in range(want):
        if stop.is_set():
            break
        card = client.deal()
        client.insert(card.code, card.deck)
        result.done += 1
        if i % every == 0:
            client.ping()
        progress.advance()


def _collect_jackpot(
    opts: CampaignOptions,
    client: Any,
    want: int,
    result: Collected,
    progress: Progress,
    stop: threading.Event,
    directory: Path,
    part: int,
) -> None:
    camp = opts.profile.campaign
    box = int(camp.get("box", 1))
    every = max(1, int(camp.get("ping_every", 5)))
    client.prize_table()
    progress.start("drawing prizes", want)
    round_base = part * 1_000_000
    forge_at = want // 2 if camp.get("inject_faults", True) and client.require_auth else -1
    i = 0
    while result.done < want:
        if stop.is_set():
            return
        trial = None
        if i == forge_at:
            trial = _inject_forgery(client)
        client.arm(round_base + i, [box])
        client.press(box)
        try:
            cents = client.result(box)
        except SecurityFault as exc:
            if trial is None or i > forge_at + 3:
                raise
            log.info("the forged result was refused: %s", exc)
            i += 1
            continue
        finally:
            if trial is not None:
                _end_forgery(client, trial, directory)
        client.display(cents)
        result.done += 1
        if i % every == 0:
            client.ping()
        i += 1
        progress.advance()
    if camp.get("inject_faults", True) and not stop.is_set():
        _madness21_and_faults(client, directory / f"madness21-{part:03d}.jsonl", round_base + want)


def _inject_forgery(client: Any) -> dict[str, Any]:
    """Have the panel forge its next result (altered after signing): the client must
    refuse it as a security fault."""
    client.inject_fault("forge_result")
    return {"fault": "forge_result", "injected_at": client.clock.wall()}


def _end_forgery(client: Any, trial: dict[str, Any], directory: Path) -> None:
    """Record the forged-result trial in ``faults.jsonl``: its ``security`` event."""
    import hashlib as _h

    t0 = trial["injected_at"]
    ev = next((e for e in list(client.events) if e.kind == "security" and e.timestamp >= t0), None)
    now = client.clock.wall()
    row = {
        "fault": "forge_result",
        "sample": -1,
        "injected_at": trial["injected_at"],
        "shoes_before": 0,
        "digest_before": _h.sha256().hexdigest(),
        "detected_at": ev.timestamp if ev is not None else None,
        "detected_by": "security" if ev is not None else None,
        "recovered_at": None,
        "ended_at": now,
        "outcome": "recovered" if not client.lost else "stopped",
        "detail": {"reason": ev.detail.get("reason") if ev is not None else None},
    }
    with (directory / "faults.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def _madness21_and_faults(client: Any, events_path: Path, first_round: int) -> None:
    """Rule 16.12 end to end: Madness 21 rounds through the SDK round engine with
    :class:`CanJackpotPanel`; a display failure during a won round must settle the won wager
    at $25 and withdraw the option.  Then a button failure, for its detection time.  The
    engine's event log goes to ``events_path`` (analysed offline too)."""
    from feltlab.cards import card_code
    from feltlab.engine import Decision, DecisionView, Table, play_round
    from feltlab.plugin_manager import collect_wagers, get_plugin_manager
    from feltlab.rig.clients import CanJackpotPanel
    from feltlab.rules import Rules
    from feltlab.shoe import FixedCards

    # player blackjack (AS KH), dealer 9D 8C (stands); twice: a round that works, then one
    # during which the panel's display fails
    deal = [card_code(c) for c in ["AS", "9D", "KH", "8C", "AD", "9C", "KS", "8H"]]
    panel = CanJackpotPanel(client)
    wagers = collect_wagers(get_plugin_manager(entry_points=False))  # the built-in wagers
    table = Table(
        Rules.preset("nz"),
        FixedCards(deal),
        [wagers.create("main"), wagers.create("madness21")],
        boxes=1,
        panel=panel,
        first_round=first_round & 0xFFFFFF,
    )
    bets = [(0, "p1", "main", 1000), (0, "p1", "madness21", 500)]

    class _Stand:
        def decide(self, view: DecisionView) -> Decision:
            return Decision.STAND

        def insurance(self, box: int, player: str, cards: Sequence[int], main_stake: int) -> int:
            return 0

    play_round(table, bets, _Stand())
    client.inject_fault("display")
    play_round(table, bets, _Stand())
    table.begin_round()
    table.place(0, "p1", "main", 1000)
    withdrawn = "madness21" in table.withdrawn
    try:
        table.place(0, "p1", "madness21", 500)
        offered = True
    except Exception:
        offered = False
    text = table.log.to_jsonl()
    text += json.dumps({"check": "withdrawn", "withdrawn": withdrawn, "offered": offered}) + "\n"
    events_path.write_text(text)
    client.inject_fault("clear")
    client.clear_fault()
    # a button failure: PRESS -> Fault BUTTON (failure detection time)
    client.inject_fault("button")
    client.arm(first_round + 10, [1])
    with contextlib.suppress(RigError):
        client.press(1)
    client.inject_fault("clear")
    client.clear_fault()


# ===================================================================== analysis
# in rig/certify_analysis.py: Analysis, analyze_batch, analyze_continuous, analyze_jackpot


# ===================================================================== the campaign


@dataclass
class CampaignResult:
    """The outcome of a campaign: verdict, exit code, the record and where it was written."""

    verdict: Verdict
    record: dict[str, Any]
    directory: Path

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.verdict, 2)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def record_part(directory: Path, part: int, capture: Path, *, recovered: bool = False) -> None:
    """Tie capture part ``part`` to its campaign: its SHA-256 (of the closed file), the
    campaign id and the device seed go into ``campaign.json``'s ``parts`` (written
    atomically).  ``--resume`` and ``analyze`` then refuse a capture that is not this one."""
    state = _read_state(directory)
    parts = [p for p in state.get("parts", []) if p.get("part") != part]
    parts.append(
        {
            "part": part,
            "file": capture.name,
            "campaign_id": state.get("campaign_id"),
            "device_seed": part_seed(int(state["seed"]), part) if "seed" in state else None,
            "sha256": _sha256(capture),
            "recovered": recovered,
        }
    )
    state["parts"] = sorted(parts, key=lambda p: int(p["part"]))
    tmp = directory / "campaign.json.tmp"
    tmp.write_text(json.dumps(state, indent=2))
    os.replace(tmp, directory / "campaign.json")


def check_parts(directory: Path, state: dict[str, Any], captures: Sequence[Path]) -> None:
    """Raise :class:`CampaignError` for a capture part of ``directory`` that is not the one
    its campaign recorded (another campaign's capture, or a file changed since).  Campaigns
    from before parts were recorded (no ``parts`` in campaign.json) are not checked."""
    if "parts" not in state:
        return
    known = {p["file"]: p for p in state["parts"]}
    for cap in captures:
        entry = known.get(cap.name)
        if entry is None:
            raise CampaignError(
                f"{cap} was not collected by campaign {state.get('campaign_id')} (no such "
                "part in its campaign.json): remove it, or analyse it on its own as a file"
            )
        if entry.get("campaign_id") != state.get("campaign_id") or entry["sha256"] != _sha256(cap):
            raise CampaignError(
                f"{cap} does not belong to campaign {state.get('campaign_id')}: its SHA-256 "
                "differs from the one recorded when the part closed (another campaign's "
                "capture, or a file changed since); restore the original part"
            )


def _is_int(v: Any, low: int, high: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


_STATE_FIELDS: dict[str, tuple[str, Any]] = {
    "campaign_id": ("a string", lambda v: isinstance(v, str)),
    "kind": (f"one of {', '.join(BUNDLED)}", lambda v: v in BUNDLED),
    "profile": (
        "a table with the profile's data",
        lambda v: (
            isinstance(v, dict)
            and isinstance(v.get("data"), dict)
            and isinstance(v.get("path"), str | None)
        ),
    ),
    "size": (f"an integer in 2..{MAX_PART_SAMPLES}", lambda v: _is_int(v, 2, MAX_PART_SAMPLES)),
    "alpha": (
        "a number in (0, 1)",
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < 1,
    ),
    "seed": (f"an integer in 0..{U64_MAX}", lambda v: _is_int(v, 0, U64_MAX)),
    "bus": ("a bus spec or null", lambda v: isinstance(v, str | None)),
    "model": ("a model name or null", lambda v: isinstance(v, str | None)),
    "started": ("a date string", lambda v: isinstance(v, str)),
}
_STATE_OPTIONAL: dict[str, tuple[str, Any]] = {
    "faults": ("a fault list or null", lambda v: isinstance(v, str | None)),
    "clock": ('"sim", "real" or null', lambda v: v in ("sim", "real", None)),
    "parts": (
        "a list of parts (part, file, campaign_id, sha256)",
        lambda v: (
            isinstance(v, list)
            and all(
                isinstance(p, dict)
                and isinstance(p.get("file"), str)
                and isinstance(p.get("sha256"), str)
                for p in v
            )
        ),
    ),
    "recovered_parts": ("a list", lambda v: isinstance(v, list)),
}


def _read_state(directory: Path) -> dict[str, Any]:
    """The campaign's ``campaign.json``, checked field by field (type and range).  Raises
    :class:`CampaignError` naming the file and the first bad or missing field."""
    path = directory / "campaign.json"
    hint = (
        "give the --out directory of a campaign (its campaign.json is written by feltlab "
        "certify and must not be edited), or analyse one capture-NNN.blf as a file"
    )
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CampaignError(
            f"cannot resume from or analyse {directory}: {path.name} is missing or unreadable "
            f"({exc}); {hint}"
        ) from None
    if not isinstance(state, dict):
        raise CampaignError(
            f"{path}: campaign.json must hold a JSON object, got {type(state).__name__}; {hint}"
        )
    for name, (want, ok) in _STATE_FIELDS.items():
        if name not in state:
            raise CampaignError(f"{path}: campaign.json has no {name!r} field; {hint}")
        if not ok(state[name]):
            raise CampaignError(
                f"{path}: campaign.json field {name!r} = {state[name]!r:.60} must be {want}; {hint}"
            )
    for name, (want, ok) in _STATE_OPTIONAL.items():
        if name in state and not ok(state[name]):
            raise CampaignError(
                f"{path}: campaign.json field {name!r} = {state[name]!r:.60} must be {want}; {hint}"
            )
    return state


def run_campaign(
    opts: CampaignOptions,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    resume: bool = False,
    live: Any = None,
) -> CampaignResult:
    """Run (or, with ``resume``, continue) a campaign into ``opts.out``: collect, analyse
    from the capture, write the report.  Setting ``stop`` (e.g. on Ctrl-C) ends collection
    cleanly; the partial record then has verdict ABORTED.  Raises :class:`CampaignError` for
    bad options.  ``live``: an optional :class:`feltlab.rig.live.CampaignObserver` told the
    campaign's state, progress, client and record (``feltlab certify --live``)."""
    prog = progress or _NoProgress()
    stop = stop or threading.Event()
    out = opts.out
    if resume:
        state = _read_state(out)
        from feltlab.rig.capture import journal_path

        closed = [c for c in _capture_paths(out) if not journal_path(c).exists()]
        check_parts(out, state, closed)  # a foreign capture is refused before any work
        prof = profile_from_dict(state["profile"]["data"], state["profile"]["path"])
        _refuse_complete(out, prof, int(state["size"]))
        opts = CampaignOptions(
            prof,
            out,
            state["bus"],
            state["model"],
            state["size"],
            state["alpha"],
            state["seed"],
            state.get("faults"),
            state.get("clock"),
        )
    else:
        campaign_fault_plan(opts.profile, opts.faults)  # bad plans and keys: before mkdir
        if opts.profile.kind == "jackpot":
            opts.profile.key()
        if opts.seed is not None and not 0 <= opts.seed <= U64_MAX:
            raise CampaignError(f"the seed must be in 0..{U64_MAX}, got {opts.seed}")
        cmd = "jackpot-panel" if opts.profile.kind == "jackpot" else "shuffler"
        _new_out_dir(
            out,
            "choose a new --out directory, or continue it with "
            f"feltlab certify {cmd} --resume {{out}}",
        )
    prof = opts.profile
    seed = opts.seed if opts.seed is not None else secrets.randbits(62)
    alpha = float(opts.alpha if opts.alpha is not None else prof.campaign.get("alpha", 0.01))
    if not 0 < alpha < 1:
        raise CampaignError(f"alpha must be in (0, 1), got {alpha}")
    size = int(opts.size if opts.size is not None else prof.campaign.get(SIZE_KEY[prof.kind], 100))
    if size < 2:
        raise CampaignError(f"the sample size must be at least 2, got {size}")
    state = {
        "campaign_id": uuid.uuid4().hex if not resume else _read_state(out)["campaign_id"],
        "kind": prof.kind,
        "profile": prof.to_dict(),
        "bus": opts.bus,
        "model": opts.model,
        "size": size,
        "alpha": alpha,
        "seed": seed,
        "faults": opts.faults,
        "clock": opts.clock_mode,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    plan = campaign_fault_plan(prof, opts.faults)  # a bad plan stops here, before collection
    if plan is not None and not resume and size < shoes_needed(len(plan.faults)):
        raise CampaignError(
            f"the fault plan injects {len(plan.faults)} faults, one per shoe with a clean shoe "
            f"before the first and after the last: it needs at least "
            f"{shoes_needed(len(plan.faults))} shoes; give --shoes "
            f"{shoes_needed(len(plan.faults))} or fewer faults"
        )
    if prof.kind == "jackpot":
        prof.key()  # so does a missing or bad key
    recovered: list[str] = []
    if resume:
        old = _read_state(out)
        state["started"] = old["started"]
        state["recovered_parts"] = old.get("recovered_parts", [])
        recovered = recover_captures(out)
        state["recovered_parts"] += recovered
        state["parts"] = old.get("parts", [])
        for name in recovered:  # a part rebuilt from its journal: recorded now
            p = int(name[len("capture-") : -len(".blf")])
            state["parts"] = [e for e in state["parts"] if e.get("part") != p]
            state["parts"].append(
                {
                    "part": p,
                    "file": name,
                    "campaign_id": state["campaign_id"],
                    "device_seed": part_seed(int(state["seed"]), p),
                    "sha256": _sha256(out / name),
                    "recovered": True,
                }
            )
        if "parts" in old or recovered:
            check_parts(out, state, _capture_paths(out))  # the recovered parts too
    (out / "campaign.json").write_text(json.dumps(state, indent=2))
    if live is not None:
        live.campaign_started(state, out)
    parts = _capture_paths(out)
    have = 0
    if parts:
        prog.start("reading the capture collected so far", None)
        have = _count_samples(read_campaign_capture(parts, prof.base), prof.kind)
        if live is not None:
            live.already_collected(have)
    part = len(parts) + 1
    collected = Collected()
    if have < size:
        with watch_host(out, state):
            collected = collect_part(
                replace(opts, seed=seed),
                out,
                part,
                seed,
                size - have,
                progress=prog,
                stop=stop,
                have=have,
                live=live,
            )
    elif resume:
        log.info("nothing left to collect: %d of %d", have, size)
    if live is None:
        return finish(out, prof, state, collected, progress=prog)
    live.analysing()
    result = finish(out, prof, state, collected, progress=live.progress(prog))
    live.finished(result.record, out)
    return result


def _new_out_dir(out: Path, hint: str) -> None:
    """Create ``out`` (or accept it empty).  Raises :class:`CampaignError` when it is a
    file, not empty, or cannot be created; ``hint`` (``{out}`` substituted) says what to do."""
    if out.exists() and not out.is_dir():
        raise CampaignError(f"{out} is a file, not a directory: give a new or empty directory")
    try:
        if out.exists() and any(out.iterdir()):
            raise CampaignError(f"{out} is not empty: " + hint.format(out=out))
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CampaignError(f"cannot create the directory {out}: {exc.strerror or exc}") from exc


def _refuse_complete(out: Path, prof: Profile, size: int) -> None:
    """Refuse to resume a finished campaign (its record written, every sample collected):
    resuming would only rewrite its record.  Raises :class:`CampaignError`."""
    if not (out / "record.json").exists():
        return
    parts = _capture_paths(out)
    have = _count_samples(read_campaign_capture(parts, prof.base), prof.kind) if parts else 0
    if have >= size:
        raise CampaignError(
            f"campaign complete ({have} of {size} {SIZE_KEY[prof.kind]} collected); "
            f"use feltlab analyze {out} to check it again"
        )


def _count_samples(data: CaptureData, kind: str) -> int:
    if kind == "batch":
        return len(data.shoes)
    if kind == "continuous":
        return sum(1 for e in data.card_events if e[0] == "deal")
    return len(data.prizes)


def analyze_campaign(
    captures: Sequence[Path],
    prof: Profile,
    *,
    alpha: float,
    seed: int,
    directory: Path | None = None,
    progress: Progress | None = None,
    host: HostUncertainty | None = None,
) -> tuple[Analysis, CaptureData]:
    """Every check of a campaign from its captures (what ``feltlab analyze`` runs).

    ``host``: the host's timing uncertainty; default the worst calibration recorded in
    ``directory`` (``host-uncertainty.jsonl``, :mod:`feltlab.rig.uncertainty`), none when
    there is none.  One check that cannot run is an ERROR measurement of its own; only an
    unreadable capture raises (RigError, OSError)."""
    prog = progress or _NoProgress()
    prog.start("decoding the capture", None)
    if host is None:
        host = combine(read_calibrations(directory))
    trials = read_trials(directory)
    data = read_campaign_capture(
        captures,
        prof.base,
        progress=prog.advance,
        exclude=fault_windows(trials, prof.heartbeat_period),
        exclude_heartbeats=fault_windows(trials, prof.heartbeat_period, heartbeat=True),
    )
    if data.frames == 0:
        a = Analysis(errors=["the capture holds no frame"], host=host)
        return a, data
    if data.heartbeat_kind is None:
        a = Analysis(
            errors=[f"no heartbeat from a device at 0x{prof.base:03X} in the capture"], host=host
        )
        return a, data
    if prof.kind == "batch":
        a = analyze_batch(data, prof, alpha=alpha, seed=seed, progress=prog, host=host)
    elif prof.kind == "continuous":
        a = analyze_continuous(data, prof, alpha=alpha, seed=seed, progress=prog, host=host)
    else:
        a = analyze_jackpot(data, prof, alpha=alpha, directory=directory, progress=prog, host=host)
    a.detail["frames"] = data.frames
    a.detail["parts"] = data.parts
    if trials:
        found = guard(a, "fault", "s", fault_results, trials, data.shoes, prof.limits)
        if found is not None:
            rows, ms = found
            a.faults = rows
            a.measurements.extend(ms)
        a.detail["samples_in_fault_windows"] = data.excluded_samples
    return a, data


def finish(
    out: Path,
    prof: Profile,
    state: dict[str, Any],
    collected: Collected,
    *,
    progress: Progress,
) -> CampaignResult:
    """Analyse the campaign in ``out`` and write its report.  In real time the host's
    timing uncertainty is calibrated once more after collection (:func:`calibrate_after`)."""
    captures = _capture_paths(out)
    errors: list[str] = []
    if collected.error:
        errors.append(f"collection: {collected.error}")
    calibrate_after(out, state)
    try:
        analysis, data = analyze_campaign(
            captures,
            prof,
            alpha=state["alpha"],
            seed=state["seed"],
            directory=out,
            progress=progress,
        )
    except (RigError, ValueError, OSError, EOFError) as exc:  # an unreadable capture
        analysis, data = Analysis(errors=[f"analysis: {exc}"]), None
        analysis.host = combine(read_calibrations(out))
    analysis.errors[:0] = errors
    size = int(state["size"])
    have = _count_samples(data, prof.kind) if data is not None else None
    if have is None:
        why = "the capture could not be analysed"
    elif collected.aborted:
        why = "collection was interrupted"
    elif collected.error:
        why = f"collection stopped: {collected.error}"
    else:
        why = "fewer samples in the capture than planned"
    analysis.measurements.append(
        _missing_measurement(
            prof.kind,
            size,
            have,
            why,
            failed=[f"{i}: {r}" for i, r in collected.missing],
        )
    )
    # the announced limits the device went beyond are judged from the capture
    # (certify_analysis._announced), so that analyze reaches the same verdict offline
    verdict = Verdict.ABORTED if collected.aborted else analysis.verdict()
    record = build_record(
        prof,
        state,
        analysis,
        captures,
        verdict,
        collected,
        collection=_collection(size, have, collected),
        heartbeat_kind=data.heartbeat_kind if data is not None else None,
    )
    plots = _plots(analysis)
    write_report(out, record, plots)
    return CampaignResult(verdict, record, out)


@contextlib.contextmanager
def watch_host(out: Path, state: dict[str, Any], clock: Clock | None = None) -> Iterator[None]:
    """Around a collection part: calibrate the host's timing uncertainty before it (on the
    campaign's bus, :func:`feltlab.rig.uncertainty.calibrate_into`) and sample the timer
    overshoot all through it (:class:`feltlab.rig.uncertainty.HostMonitor`), both recorded
    in ``out/host-uncertainty.jsonl``.  ``clock``: the campaign's (default: a real clock of
    its own).  In simulated time (``clock.simulated``, or ``state["clock"] ==
    "sim"``) it records simulated time and measures nothing."""
    from feltlab.rig.clock import RealClock
    from feltlab.rig.uncertainty import (
        HostMonitor,
        HostUncertainty,
        calibrate_into,
        record_calibration,
    )

    if state.get("clock") == "sim" or (clock is not None and clock.simulated):
        record_calibration(out, HostUncertainty.simulated_time("before"))
        yield
        return
    own = clock is None
    real: Clock = RealClock("feltlab-calibration") if clock is None else clock
    calibrate_into(out, real, state.get("bus"), when="before")
    monitor = HostMonitor(real, state.get("bus"), out).start()
    try:
        yield
    finally:
        monitor.stop()
        if own:
            real.close()


def calibrate_after(out: Path, state: dict[str, Any]) -> None:
    """Record one more calibration of the host's timing uncertainty in ``out`` after
    collection, on the campaign's bus, unless the campaign ran in simulated time
    (``state["clock"] == "sim"`` or a simulated calibration recorded): the analysis
    then uses the worst of the calibrations before, during and after.  A calibration that
    cannot run is logged, never the loss of the record."""
    from feltlab.rig.clock import RealClock
    from feltlab.rig.uncertainty import calibrate_into

    recorded = read_calibrations(out)
    if state.get("clock") == "sim" or any(c.simulated for c in recorded):
        return
    clock = RealClock("feltlab-calibration")
    try:
        calibrate_into(out, clock, state.get("bus"), when="after collection")
    finally:
        clock.close()


def _missing_measurement(
    kind: str, size: int, have: int | None, why: str, *, failed: Sequence[str] = ()
) -> Measurement:
    """``collection.<samples>_missing``: the planned samples (``campaign.json``) that are not
    in the capture.  FAIL when the device failed to deliver a sample it was asked for
    (``failed``) and it is not in the capture (one that came too late for the host but reached
    the capture is counted in ``late``; its lateness is judged by the timing checks); ERROR
    when collection stopped early for another reason (``why``:
    interrupted, the bus or device gone, nothing collected); PASS at 0."""
    unit = SIZE_KEY[kind]
    name = f"collection.{unit}_missing"
    if have is None:
        return Measurement(name, None, unit, None, 0.0, Verdict.ERROR, {"reason": why})
    lost = max(0, size - have)
    detail: dict[str, Any] = {"planned": size, "collected": have}
    if failed:
        detail["reasons"] = list(failed[:10])
    if failed and lost:
        return Measurement(name, float(lost), unit, None, 0.0, Verdict.FAIL, detail)
    if failed:  # the host gave up on them, but the device's (late) replies are in the capture
        detail["late"] = len(failed)
    if lost:
        detail["reason"] = why
        return Measurement(name, float(lost), unit, None, 0.0, Verdict.ERROR, detail)
    return Measurement(name, 0.0, unit, None, 0.0, Verdict.PASS, detail)


def _collection(size: int, have: int | None, collected: Collected | None) -> dict[str, Any]:
    """The record's ``collection``: the planned size, the samples in the capture (every
    part), whether this run was interrupted, and this run's own part."""
    return {
        "requested": size,
        "collected": have,
        "missing_count": None if have is None else max(0, size - have),
        "complete": have is not None and have >= size,
        "aborted": collected.aborted if collected else False,
        "this_part": {"requested": collected.requested, "collected": collected.done}
        if collected
        else None,
        "missing": collected.missing[:50] if collected else [],
        "bus": collected.bus if collected else {},
        "stale_replies": collected.stale_replies if collected else 0,
        "limits_exceeded": [m for *_, m in collected.limits_exceeded] if collected else [],
        "rig_errors": [e for _, e in collected.crashes][:20] if collected else [],
    }


KIND_LABELS = {1: "batch shuffler", 2: "continuous shuffler", 3: "jackpot prize panel"}
"""What a device calls itself in its heartbeat (``Kind``)."""


def device_name(prof: Profile, state: dict[str, Any], heartbeat_kind: int | None = None) -> str:
    """The device under test, for titles and records: the simulated device and its model,
    or the device that answered on the bus (its heartbeat's kind, its base id, the bus)."""
    simulated = state.get("bus") is None or state.get("model") is not None
    if simulated:
        if prof.kind != "batch":
            return prof.name
        model = state.get("model") or prof.simulation.get("model") or "fisher-yates"
        decks = prof.device.get("decks", 6)
        return f"feltlab simulated {decks}-deck batch shuffler (ChaCha20, model {model})"
    label = KIND_LABELS.get(heartbeat_kind or 0)
    who = (
        label
        if label
        else (f"device of kind {heartbeat_kind}" if heartbeat_kind is not None else "device")
    )
    heard = "" if heartbeat_kind is not None else " (no heartbeat heard)"
    return f"{who} at 0x{prof.base:03X} on {state.get('bus')}{heard}"


def _plots(analysis: Analysis) -> list[tuple[str, str]]:
    p = analysis.plots
    try:
        return make_plots(
            position_counts=p.get("position_counts"),
            rising=p.get("rising"),
            eulerian=p.get("eulerian"),
            latencies=p.get("latencies"),
        )
    except Exception as exc:  # a plot must never lose the record
        log.warning("plots failed: %s", exc)
        return []


def build_record(
    prof: Profile,
    state: dict[str, Any],
    analysis: Analysis,
    captures: Sequence[Path],
    verdict: Verdict,
    collected: Collected | None = None,
    *,
    collection: dict[str, Any] | None = None,
    heartbeat_kind: int | None = None,
) -> dict[str, Any]:
    """The versioned JSON record of a campaign (see docs/certification.md)."""
    model = state.get("model") or prof.simulation.get("model") or "fisher-yates"
    simulated = state.get("bus") is None or state.get("model") is not None
    if heartbeat_kind is None and collected is not None:
        heartbeat_kind = collected.online.get("Kind")
    return {
        "record_version": RECORD_VERSION,
        "campaign_id": state.get("campaign_id"),
        "kind": prof.kind,
        "device": {
            "name": device_name(prof, state, heartbeat_kind),
            "profile_name": prof.name,
            "kind": prof.kind,
            "base": f"0x{prof.base:03X}",
            "simulated": simulated,
            "model": model if simulated and prof.kind == "batch" else None,
            "bus": state.get("bus") or "in-process virtual bus",
            "heartbeat": collected.online if collected else {},
            "key_id": prof.key_id,
            "authenticate": prof.authenticate,
        },
        "profile": prof.to_dict(),
        "software": software_versions(),
        "seed": state.get("seed"),
        "seeds": {
            "derivation": SEED_DERIVATION_VERSION,
            "campaign": state.get("seed"),
            "device_parts": [part_seed(int(state["seed"]), i + 1) for i in range(len(captures))]
            if simulated
            else None,
            "power_and_null_simulations": state.get("seed"),
        },
        "options": {
            "size": state.get("size"),
            "alpha": state.get("alpha"),
            "faults": state.get("faults"),
        },
        "recovered_parts": state.get("recovered_parts", []),
        "clock": clock_record(state),
        "started": state.get("started"),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "verdict": str(verdict),
        "capture": ", ".join(p.name for p in captures),
        "captures": [p.name for p in captures],
        "collection": collection
        if collection is not None
        else _collection(int(state.get("size") or 0), None, collected),
        "battery": analysis.battery.to_dict() if analysis.battery else None,
        "measurements": [m.to_dict() for m in analysis.measurements],
        "errors": analysis.errors,
        "detail": analysis.detail,
        "faults": analysis.faults,
        "security_faults": analysis.security_faults,
        "host_uncertainty": analysis.host.to_dict()
        if analysis.host is not None
        else {
            "source": "not measured",
            "reason": "no calibration recorded with the capture (host-uncertainty.jsonl): "
            "timing verdicts use the plain PASS/FAIL rule",
        },
    }


def clock_record(state: dict[str, Any]) -> dict[str, Any]:
    """What the record says of the campaign's time base (``state["clock"]``; campaigns
    from before the clock option ran in real time)."""
    mode = state.get("clock") or "real"
    if mode == "sim":
        text = (
            "simulated time: the device's timing model, the frames' bit times at the bus "
            "bitrate and the host's timeouts on one deterministic discrete-event clock; the "
            "timings are the simulated device's, independent of the host"
        )
    else:
        text = "real time: the host's monotonic clock and software timestamps"
    return {"mode": mode, "description": text}


def verdict_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The verdicts and statistics of a record, for comparing a live campaign with its
    offline re-analysis (times, software and the live collection's bookkeeping excluded:
    the shoes that never arrived are not in the capture)."""
    bat = record.get("battery") or {}
    return {
        "verdict": record["verdict"],
        "battery": [
            (c["name"], c["statistic"], c["p_value"], c["adjusted_p"], c["verdict"], c["power"])
            for c in bat.get("checks", [])
        ],
        "integrity": bat.get("integrity"),
        "measurements": [
            (m["name"], m["value"], m["verdict"])
            for m in record["measurements"]
            if not m["name"].startswith("collection.")
        ],
    }


def analyze_path(
    path: Path,
    profile_ref: str | None,
    *,
    out: Path | None,
    alpha: float | None = None,
    seed: int | None = None,
    progress: Progress | None = None,
) -> CampaignResult:
    """``feltlab analyze``: re-run every check from a capture file or campaign directory.
    The profile, alpha and seed come from the campaign's ``campaign.json`` when present,
    else from the options (default: the bundled batch profile, alpha 0.01, seed 0).  The
    report goes to ``out`` when given."""
    prog = progress or _NoProgress()
    if seed is not None and not 0 <= seed <= U64_MAX:
        raise CampaignError(f"the seed must be in 0..{U64_MAX}, got {seed}")
    if out is not None and (
        (out.exists() and not out.is_dir()) or (out.is_dir() and any(out.iterdir()))
    ):
        raise CampaignError(
            f"{out} is not a new or empty directory: analyze never overwrites a report or a "
            "campaign's record; choose a new --out directory"
        )
    directory = path if path.is_dir() else path.parent
    state: dict[str, Any] = {}
    if (directory / "campaign.json").exists():
        state = _read_state(directory)
    captures = _capture_paths(path) if path.is_dir() else [path]
    if not captures:
        raise CampaignError(f"no capture-NNN.blf in {path}")
    if profile_ref is not None:
        prof = load_profile(profile_ref)
    elif state:
        prof = profile_from_dict(state["profile"]["data"], state["profile"]["path"])
    else:
        prof = load_profile(None, "batch")
    use_alpha = float(alpha if alpha is not None else state.get("alpha", 0.01))
    use_seed = int(seed if seed is not None else state.get("seed", 0))
    st = {
        "campaign_id": state.get("campaign_id"),
        "bus": state.get("bus"),
        "model": state.get("model"),
        "size": state.get("size"),
        "alpha": use_alpha,
        "seed": use_seed,
        "clock": state.get("clock"),
        "started": state.get("started"),
    }
    if path.is_dir() and state:
        check_parts(directory, state, captures)
    analysis, data = analyze_campaign(
        captures, prof, alpha=use_alpha, seed=use_seed, directory=directory, progress=prog
    )
    have = _count_samples(data, prof.kind)
    planned = state.get("size") if path.is_dir() else None
    collection: dict[str, Any] = {
        "requested": planned,
        "collected": have,
        "missing_count": None,
        "complete": None,
        "aborted": False,
        "this_part": None,
        "missing": [],
    }
    incomplete = False
    if planned is not None:
        size = int(planned)
        incomplete = have < size
        collection.update(
            missing_count=max(0, size - have), complete=not incomplete, aborted=incomplete
        )
        what = SIZE_KEY[prof.kind]
        analysis.measurements.append(
            _missing_measurement(
                prof.kind,
                size,
                have,
                f"collection incomplete: {have} of {size} {what} in the capture",
            )
        )
        if incomplete:
            analysis.errors.append(
                f"collection incomplete: {have} of the {size} {what} planned "
                f"(campaign.json) are in the capture; continue it with feltlab certify "
                f"{'jackpot-panel' if prof.kind == 'jackpot' else 'shuffler'} --resume {directory}"
            )
    verdict = Verdict.ABORTED if incomplete else analysis.verdict()
    record = build_record(
        prof,
        st,
        analysis,
        captures,
        verdict,
        collection=collection,
        heartbeat_kind=data.heartbeat_kind,
    )
    record["analyzed_offline"] = True
    if out is not None:
        _new_out_dir(out, "choose a new --out directory")
        write_report(out, record, _plots(analysis))
    return CampaignResult(verdict, record, out or directory)


__all__ = [
    "BUNDLED",
    "Analysis",
    "CampaignError",
    "CampaignOptions",
    "CampaignResult",
    "Profile",
    "analyze_campaign",
    "analyze_path",
    "load_profile",
    "run_campaign",
    "verdict_summary",
]

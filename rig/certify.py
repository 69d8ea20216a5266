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
import math
import os
import platform
import secrets
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from feltlab import native
from feltlab.errors import FeltlabError
from feltlab.rig import battery
from feltlab.rig.battery import Verdict
from feltlab.rig.certify_capture import CaptureData, read_campaign_capture, timestamp_resolution
from feltlab.rig.certify_faults import (
    FaultPlan,
    FaultRunner,
    fault_plan,
    fault_results,
    fault_windows,
    read_trials,
)
from feltlab.rig.clock import Clock, RealClock, SimClock
from feltlab.rig.devices import read_profile_toml
from feltlab.rig.errors import DeviceKeyError, DeviceLost, DeviceRefused, RigError, SecurityFault
from feltlab.rig.measures import Measurement, prize_distribution_test, timing_measurements, within
from feltlab.rig.protocol import UNKNOWN_DECK, Result
from feltlab.rig.report import RECORD_VERSION, make_plots, write_report
from feltlab.rig.secoc import DeviceKey, FreshnessVerifier, load_key
from feltlab.rig.seeds import U64_MAX

log = logging.getLogger(__name__)

PROFILE_DIR = Path(__file__).with_name("profiles")
BUNDLED = {"batch": "batch6", "continuous": "continuous", "jackpot": "jackpot"}
"""The bundled default profile of each device kind (``rig/profiles/<name>.toml``)."""

EXIT_CODES = {Verdict.PASS: 0, Verdict.FAIL: 1}
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
        """The profile for records and ``campaign.json``: an inline ``key`` is redacted
        (only ``key_id`` is shown); a ``key_file`` is kept as an absolute path."""
        raw = dict(self.raw)
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

    def new_clock(self) -> Clock:
        """A new clock of :attr:`clock_mode`."""
        return SimClock() if self.clock_mode == "sim" else RealClock("campaign")


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


def part_seed(seed: int, part: int) -> int:
    """The simulated device's ChaCha20 seed for collection part ``part`` (a resumed campaign
    restarts the device: a new, independent stream, never a repeat of the last part's)."""
    return int.from_bytes(hashlib.sha256(f"feltlab:{seed}:{part}".encode()).digest()[:8], "little")


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
    if opts.simulated:
        dev_opts = prof.device_options(simulated=True)
        extra: dict[str, Any] = {"seed": part_seed(seed, part)}
        if opts.model is not None:
            if prof.kind != "batch":
                raise CampaignError(f"--model applies to batch shufflers, not {prof.kind}")
            extra["model"] = opts.model
        dev = make_device(prof.kind, spec, dev_opts, clock=clock, **extra).start()
    kw: dict[str, Any] = {}
    if prof.kind == "jackpot":
        key = prof.key()
        if key is not None:
            kw = {"key": key, "require_auth": prof.authenticate}
    try:
        client = CLIENT_KINDS[prof.kind](
            spec,
            base=prof.base,
            timeout=float(prof.campaign.get("timeout", 0.5)),
            capture=capture,
            heartbeat_period=prof.heartbeat_period,
            clock=clock,
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
) -> Collected:
    """Collect ``want`` more samples (shoes, deals or draws) into ``capture-<part>.blf``.
    Stops cleanly (capture flushed) when ``stop`` is set; device errors end the part with
    ``error`` set."""
    capture = directory / f"capture-{part:03d}.blf"
    result = Collected(requested=want)
    dev = client = None
    runner: FaultRunner | None = None
    clock = opts.new_clock()
    try:
        dev, client, _spec = _open(opts, capture, part, seed, clock)
        hb = client.wait_online(float(opts.profile.campaign.get("online_timeout", 3.0)))
        result.online = {k: int(v) for k, v in hb.signals.items()}
        kind = opts.profile.kind
        plan = campaign_fault_plan(opts.profile, opts.faults)
        if plan is not None:
            done = [t["fault"] for t in read_trials(directory)]
            runner = FaultRunner(plan, client, want, directory, have=have, done=done)
        if kind == "batch":
            _collect_batch(opts, client, want, result, progress, stop, runner)
        elif kind == "continuous":
            _collect_continuous(opts, client, want, result, progress, stop)
        else:
            _collect_jackpot(opts, client, want, result, progress, stop, directory, part)
        _wait_heartbeats(client, opts.profile.heartbeat_period, stop)
    except KeyboardInterrupt:
        result.aborted = True
    except FeltlabError as exc:  # a rig error, or the SDK's (a withdrawn Madness 21 wager)
        result.error = str(exc)
        log.error("collection stopped: %s", exc)
    finally:
        if runner is not None and runner.pending:
            runner.after_sample(stopped=True, limits=opts.profile.limits)
        if client is not None:
            client.close()  # flushes the capture
        if dev is not None:
            dev.stop()
        clock.close()
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
    from feltlab.plugins.madness21 import Madness21
    from feltlab.plugins.main import Main
    from feltlab.rig.clients import CanJackpotPanel
    from feltlab.rules import Rules
    from feltlab.shoe import FixedCards

    # player blackjack (AS KH), dealer 9D 8C (stands); twice: a round that works, then one
    # during which the panel's display fails
    deal = [card_code(c) for c in ["AS", "9D", "KH", "8C", "AD", "9C", "KS", "8H"]]
    panel = CanJackpotPanel(client)
    table = Table(
        Rules.preset("nz"),
        FixedCards(deal),
        [Main(), Madness21()],
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


@dataclass
class Analysis:
    """The statistics and verdicts of a campaign (what the record stores)."""

    battery: battery.BatteryResult | None = None
    measurements: list[Measurement] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    plots: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    security_faults: list[dict[str, Any]] = field(default_factory=list)

    def verdict(self) -> Verdict:
        vs = [m.verdict for m in self.measurements]
        if self.battery is not None:
            vs.append(self.battery.verdict)
        if Verdict.FAIL in vs:
            return Verdict.FAIL
        if self.errors or Verdict.ERROR in vs or not vs:
            return Verdict.ERROR
        return Verdict.PASS


def _timing(
    a: Analysis, data: CaptureData, name: str, sample: str, limits: dict[str, float]
) -> None:
    samples = data.timings.get(sample, [])
    if not samples:
        if f"{name}_p99" in limits or f"{name}_max" in limits:
            a.measurements.append(within(f"{name}.p99", None, "s", reason="no samples"))
        return
    a.measurements.extend(
        timing_measurements(
            name,
            samples,
            limit_p99=limits.get(f"{name}_p99"),
            limit_max=limits.get(f"{name}_max"),
            resolution=timestamp_resolution(data.first_stamp),
        )
    )


def _heartbeat(a: Analysis, data: CaptureData, prof: Profile) -> None:
    gaps = np.asarray(data.heartbeat_gaps, dtype=np.float64)
    period = prof.heartbeat_period
    if gaps.size < 2:
        a.measurements.append(within("heartbeat.period", None, "s", reason="< 3 heartbeats"))
        return
    tol = prof.limits.get("heartbeat_period_tolerance", 0.05)
    res = timestamp_resolution(data.first_stamp)
    a.measurements.append(
        within(
            "heartbeat.period",
            float(gaps.mean()),
            "s",
            period * (1 - tol),
            period * (1 + tol),
            declared=period,
            n=int(gaps.size),
            resolution_s=res,
        )
    )
    jitter = np.abs(gaps - period)
    a.measurements.extend(
        timing_measurements(
            "heartbeat_jitter",
            jitter,
            limit_p99=prof.limits.get("heartbeat_jitter_p99"),
            limit_max=prof.limits.get("heartbeat_jitter_max"),
            resolution=res,
        )
    )
    a.plots.setdefault("latencies", {})["heartbeat interval"] = gaps.tolist()


def _integrity(shoes: Sequence[Any], loaded: np.ndarray) -> tuple[str | None, list[np.ndarray]]:
    """Name the first shoe that is not a permutation of the loaded cards, by its device
    shoe number and the card; else None and the shoes' ids."""
    from feltlab.cards import card_str

    def name(ident: int) -> str:
        return f"card id {ident} ({card_str(ident % 52, symbols=False)} of deck {ident // 52})"

    want = Counter(loaded.tolist())
    out: list[np.ndarray] = []
    for s in shoes:
        sh = s.shoe
        if (sh.card_decks == UNKNOWN_DECK).any():
            return (
                f"{s.label}: the device reports deck 0xFF (it cannot tell decks apart); "
                "permutation checks need card ids: set reports_decks",
                out,
            )
        ids = sh.card_decks.astype(np.int64) * 52 + sh.codes
        got = Counter(ids.tolist())
        if got != want:
            parts = []
            dup = sorted(k for k, v in got.items() if v > want.get(k, 0) and k in want)
            miss = sorted(k for k, v in want.items() if got.get(k, 0) < v)
            extra = sorted(k for k in got if k not in want)
            if dup:
                parts.append("duplicated " + ", ".join(name(k) for k in dup[:5]))
            if miss:
                parts.append("missing " + ", ".join(name(k) for k in miss[:5]))
            if extra:
                parts.append("never loaded " + ", ".join(name(k) for k in extra[:5]))
            return (
                f"{s.label} ({len(ids)} cards, {len(loaded)} loaded) is not a permutation "
                "of the loaded cards: " + "; ".join(parts),
                out,
            )
        out.append(ids.astype(np.uint16))
    return None, out


def analyze_batch(
    data: CaptureData,
    prof: Profile,
    *,
    alpha: float,
    seed: int,
    progress: Progress,
    shoes: Sequence[Any] | None = None,
) -> Analysis:
    """The randomness battery and timing checks of a batch shuffler campaign.

    ``shoes`` (default: the capture's) are :class:`feltlab.rig.certify_capture.ShoeRead`."""
    a = Analysis()
    sample = list(data.shoes if shoes is None else shoes)
    a.detail["payload_errors"] = data.payload_errors
    lim = prof.limits
    _timing(a, data, "shuffle_cycle", "shuffle_cycle", lim)
    _timing(a, data, "first_card", "first_card", lim)
    _timing(a, data, "per_card", "per_card", lim)
    _timing(a, data, "round_trip", "round_trip.ping", lim)
    _heartbeat(a, data, prof)
    for nm in ("shuffle_cycle", "first_card", "round_trip.ping"):
        if data.timings.get(nm):
            a.plots.setdefault("latencies", {})[nm] = data.timings[nm]
    if len(sample) < 2:
        a.errors.append(f"{len(sample)} shoe(s) collected: the battery needs at least 2")
        return a
    ld = sample[0].load
    if ld is None or any(
        s.load is None
        or not np.array_equal(s.load.codes, ld.codes)
        or not np.array_equal(s.load.card_decks, ld.card_decks)
        for s in sample
    ):  # each part LOADs the same order: compare them by content
        a.errors.append("the shoes were not all shuffled from one known LOAD order")
        return a
    loaded = ld.card_decks.astype(np.int64) * 52 + ld.codes
    progress.start("analysing: integrity", len(sample))
    problem, ids = _integrity(sample, loaded)
    progress.advance(len(sample))
    if problem is not None:
        a.battery = battery.integrity_failure(problem, alpha, len(sample), len(loaded))
        return a
    out_ids = np.stack(ids)
    perm = battery.input_positions(out_ids, loaded.astype(np.uint16))
    codes = np.ascontiguousarray((out_ids % 52).astype(np.uint8))
    progress.start("analysing: battery", 1)
    res = battery.run_battery(perm, alpha=alpha, codes=codes, loaded_ids=loaded)
    progress.advance()
    alts = list(prof.campaign.get("power_alternatives", ["riffle:k=7", "shelf:m=10"]))
    reps = int(prof.campaign.get("power_replicates", 10))
    power: dict[str, dict[str, float]] = {}
    progress.start("analysing: power against named alternatives", len(alts))
    for alt in alts:
        power[alt] = battery.estimate_power(
            alt, perm.shape[0], perm.shape[1], alpha=alpha, replicates=reps, seed=seed
        )
        progress.advance()
    checks = tuple(
        replace(c, power={alt: power[alt].get(c.name, math.nan) for alt in alts})
        for c in res.checks
    )
    a.battery = replace(res, checks=checks)
    a.detail["power"] = {"replicates": reps, "alternatives": power}
    a.plots["position_counts"] = native.battery_pass(perm).position_counts
    a.plots["rising"] = native.battery_pass(perm).rising
    a.plots["eulerian"] = battery.eulerian_pmf(perm.shape[1])
    return a


def analyze_continuous(
    data: CaptureData, prof: Profile, *, alpha: float, seed: int, progress: Progress
) -> Analysis:
    """Return-gap check (against the declared slot model) and timing of a continuous shuffler."""
    from feltlab.rig.certify_continuous import gap_test, observed_gaps

    a = Analysis()
    lim = prof.limits
    _timing(a, data, "first_card", "first_card", lim)
    _timing(a, data, "per_card", "per_card", lim)
    _timing(a, data, "round_trip", "round_trip.ping", lim)
    _heartbeat(a, data, prof)
    if data.timings.get("per_card"):
        a.plots.setdefault("latencies", {})["per card"] = data.timings["per_card"]
    gaps, problems = observed_gaps(data.card_events)
    a.measurements.append(
        within(
            "integrity.cards_not_held",
            float(len(problems)),
            "cards",
            None,
            0.0,
            first=problems[:5],
        )
    )
    deals = sum(1 for e in data.card_events if e[0] == "deal")
    loads = [e for e in data.card_events if e[0] == "load"]
    if not loads or gaps.size == 0:
        a.errors.append("no LOAD or no card returned and dealt again: nothing to test")
        return a
    n_cards = len(loads[-1][2])
    slots = int(prof.device.get("slots", 38))
    reps = int(prof.campaign.get("null_replicates", 199))
    progress.start("analysing: simulating the declared model", reps)
    test = gap_test(
        gaps,
        n_cards=n_cards,
        slots=slots,
        deals=deals,
        seed=seed,
        replicates=reps,
        progress=progress.advance,
    )
    a.measurements.append(
        within(
            "return_gap.p_value",
            test.p_value,
            "",
            alpha,
            None,
            **test.to_dict(),
        )
    )
    a.measurements.append(
        within("return_gap.mean", test.mean_gap, "cards", expected=test.expected_mean_gap)
    )
    return a


def analyze_jackpot(
    data: CaptureData,
    prof: Profile,
    *,
    alpha: float,
    directory: Path | None,
    progress: Progress,
) -> Analysis:
    """Prize distribution, button-to-result latency, failure detection and the rule 16.12
    Madness 21 fallback of a jackpot panel campaign."""
    a = Analysis()
    lim = prof.limits
    key = prof.key()
    if key is not None:
        _authenticate(a, data, prof, key)
    table = prof.device.get("prize_table")
    progress.start("analysing: prize distribution", 1)
    if not table:
        a.errors.append("the profile declares no prize_table")
    elif not data.prizes:
        a.errors.append("no prize was drawn")
    else:
        weights = {int(c): int(w) for c, w in table}
        declared = [[int(c), int(w)] for c, w in table]
        for rows in data.prize_tables[:1]:
            same = sorted(list(r) for r in rows) == sorted(declared)
            a.measurements.append(
                within(
                    "prize_table.matches_profile",
                    1.0 if same else 0.0,
                    "",
                    1,
                    1,
                    device=[list(r) for r in rows],
                    profile=declared,
                )
            )
        pt = prize_distribution_test(data.prizes, weights, alpha=alpha)
        a.measurements.append(
            Measurement(
                "prize_distribution.p_value", pt.p_value, "", alpha, None, pt.verdict, pt.to_dict()
            )
        )
    progress.advance()
    _timing(a, data, "button_to_result", "button_to_result", lim)
    _timing(a, data, "round_trip", "round_trip.ping", lim)
    _heartbeat(a, data, prof)
    if data.timings.get("button_to_result"):
        a.plots.setdefault("latencies", {})["button to result"] = data.timings["button_to_result"]
    if prof.campaign.get("inject_faults", True):
        det = data.timings.get("failure_detection", [])
        a.measurements.append(
            within(
                "failure_detection.max",
                max(det) if det else None,
                "s",
                None,
                lim.get("failure_detection_max"),
                n=len(det),
                faults=[f["FaultCode"] for f in data.faults],
            )
        )
        _madness21(a, directory)
    return a


def _authenticate(a: Analysis, data: CaptureData, prof: Profile, key: DeviceKey) -> None:
    """Verify every captured jackpot result's MAC as the client does (per part: a part is
    a new device session): the prizes drawn are the accepted results only; each refused one
    (forged, replayed, reordered, or without a MAC when the profile requires authentication)
    is a security fault of the record."""
    from feltlab.rig.protocol import Codec

    codec = Codec(prof.base)
    data_id = codec.id_of("JackpotResult")
    prizes: list[int] = []
    refused: list[dict[str, Any]] = []
    verifier: FreshnessVerifier | None = None
    part_now = 0
    accepted_round: dict[int, int] = {}  # freshness -> RoundTag of the accepted result
    for part, t, sig, mac in data.results:
        if part != part_now:
            part_now, verifier, accepted_round = part, FreshnessVerifier(key, data_id), {}
        assert verifier is not None
        row = {"part": part, "time": t, "draw_counter": sig["DrawCounter"], "box": sig["Box"]}
        if mac is None:
            if prof.authenticate:
                refused.append({**row, "reason": "unauthenticated"})
            continue
        payload = bytes(codec.encode("JackpotResult", sig).data)
        try:
            v = verifier.verify(payload, sig["DrawCounter"], int(mac).to_bytes(8, "little"))
        except SecurityFault as exc:
            refused.append({**row, "reason": exc.reason})
            continue
        if v.fresh:
            accepted_round[v.freshness] = sig["RoundTag"]
            prizes.append(sig["PrizeCents"])
        elif accepted_round.get(v.freshness) != sig["RoundTag"]:
            refused.append({**row, "reason": "replayed"})
    data.prizes = prizes
    a.security_faults = refused
    expected = 1 if prof.authenticate and prof.campaign.get("inject_faults", True) else 0
    a.measurements.append(
        within(
            "security.results_refused",
            float(len(refused)),
            "results",
            expected,
            expected,
            key_id=key.key_id,
            injected=expected,
            reasons=sorted({r["reason"] for r in refused}),
        )
    )


def _madness21(a: Analysis, directory: Path | None) -> None:
    from feltlab.events import read_jsonl

    files = sorted(directory.glob("madness21-*.jsonl")) if directory else []
    if not files:
        a.measurements.append(
            within("madness21.fallback_payout", None, "cents", 2500, 2500, reason="no log")
        )
        return
    lines = files[-1].read_text().splitlines()
    tail = json.loads(lines[-1])
    events = read_jsonl("\n".join(lines[:-1]))
    settled = [
        e.data for e in events if e.kind == "wager_settled" and e.data.get("wager") == "madness21"
    ]
    faults = [e for e in events if e.kind == "device_fault"]
    fallback = [s for s in settled if s.get("rule") == "16.12"]
    paid = [s for s in settled if s.get("rule") == "15A.7"]
    a.measurements.append(
        within(
            "madness21.fallback_payout",
            float(fallback[0].get("net", math.nan)) if fallback else None,
            "cents",
            2500,
            2500,
            rule="16.12",
            faults=[e.data.get("message") for e in faults],
        )
    )
    a.measurements.append(
        within(
            "madness21.option_withdrawn",
            1.0 if tail.get("withdrawn") and not tail.get("offered") else 0.0,
            "",
            1,
            1,
            rule="16.12",
        )
    )
    a.measurements.append(
        within(
            "madness21.prize_paid_rounds",
            float(len(paid)),
            "rounds",
            1,
            None,
            rule="15A.7",
            prizes=[s.get("net") for s in paid],
        )
    )


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


def _read_state(directory: Path) -> dict[str, Any]:
    path = directory / "campaign.json"
    try:
        state: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CampaignError(
            f"cannot resume from {directory}: {path.name} missing or unreadable ({exc}); "
            "--resume takes the --out directory of an interrupted campaign"
        ) from exc
    return state


def run_campaign(
    opts: CampaignOptions,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    resume: bool = False,
) -> CampaignResult:
    """Run (or, with ``resume``, continue) a campaign into ``opts.out``: collect, analyse
    from the capture, write the report.  Setting ``stop`` (e.g. on Ctrl-C) ends collection
    cleanly; the partial record then has verdict ABORTED.  Raises :class:`CampaignError` for
    bad options."""
    prog = progress or _NoProgress()
    stop = stop or threading.Event()
    out = opts.out
    if resume:
        state = _read_state(out)
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
        _new_out_dir(out, "choose a new --out directory, or --resume {out}")
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
    campaign_fault_plan(prof, opts.faults)  # a bad plan stops here, before any collection
    if prof.kind == "jackpot":
        prof.key()  # so does a missing or bad key
    recovered: list[str] = []
    if resume:
        old = _read_state(out)
        state["started"] = old["started"]
        state["recovered_parts"] = old.get("recovered_parts", [])
        recovered = recover_captures(out)
        state["recovered_parts"] += recovered
    (out / "campaign.json").write_text(json.dumps(state, indent=2))
    parts = _capture_paths(out)
    have = 0
    if parts:
        prog.start("reading the capture collected so far", None)
        have = _count_samples(read_campaign_capture(parts, prof.base), prof.kind)
    part = len(parts) + 1
    collected = Collected()
    if have < size:
        collected = collect_part(
            replace(opts, seed=seed),
            out,
            part,
            seed,
            size - have,
            progress=prog,
            stop=stop,
            have=have,
        )
    elif resume:
        log.info("nothing left to collect: %d of %d", have, size)
    return finish(out, prof, state, collected, progress=prog)


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
) -> tuple[Analysis, CaptureData]:
    """Every check of a campaign from its captures (what ``feltlab analyze`` runs)."""
    prog = progress or _NoProgress()
    prog.start("decoding the capture", None)
    trials = read_trials(directory)
    data = read_campaign_capture(
        captures,
        prof.base,
        progress=prog.advance,
        exclude=fault_windows(trials, prof.heartbeat_period),
        exclude_heartbeats=fault_windows(trials, prof.heartbeat_period, heartbeat=True),
    )
    if data.frames == 0:
        a = Analysis(errors=["the capture holds no frame"])
        return a, data
    if data.heartbeat_kind is None:
        a = Analysis(errors=[f"no heartbeat from a device at 0x{prof.base:03X} in the capture"])
        return a, data
    if prof.kind == "batch":
        a = analyze_batch(data, prof, alpha=alpha, seed=seed, progress=prog)
    elif prof.kind == "continuous":
        a = analyze_continuous(data, prof, alpha=alpha, seed=seed, progress=prog)
    else:
        a = analyze_jackpot(data, prof, alpha=alpha, directory=directory, progress=prog)
    a.detail["frames"] = data.frames
    a.detail["parts"] = data.parts
    if trials:
        rows, ms = fault_results(trials, data.shoes, prof.limits)
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
    """Analyse the campaign in ``out`` and write its report."""
    captures = _capture_paths(out)
    errors: list[str] = []
    if collected.error:
        errors.append(f"collection: {collected.error}")
    try:
        analysis, data = analyze_campaign(
            captures,
            prof,
            alpha=state["alpha"],
            seed=state["seed"],
            directory=out,
            progress=progress,
        )
    except (RigError, ValueError) as exc:
        analysis, data = Analysis(errors=[f"analysis: {exc}"]), None
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


def _missing_measurement(
    kind: str, size: int, have: int | None, why: str, *, failed: Sequence[str] = ()
) -> Measurement:
    """``collection.<samples>_missing``: the planned samples (``campaign.json``) that are not
    in the capture.  FAIL when the device failed to deliver a sample it was asked for
    (``failed``); ERROR when collection stopped early for another reason (``why``:
    interrupted, the bus or device gone, nothing collected); PASS at 0."""
    unit = SIZE_KEY[kind]
    name = f"collection.{unit}_missing"
    if have is None:
        return Measurement(name, None, unit, None, 0.0, Verdict.ERROR, {"reason": why})
    lost = max(0, size - have)
    detail: dict[str, Any] = {"planned": size, "collected": have}
    if failed:
        detail["reasons"] = list(failed[:10])
        return Measurement(name, float(lost), unit, None, 0.0, Verdict.FAIL, detail)
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
        "started": state.get("started"),
    }
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
                f"--resume {directory}"
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

"""Collection of a certification campaign: :class:`CampaignOptions`, opening the device and
its client (:func:`open_part`), what every kind's collection loop shares (:func:`wait_back`,
:func:`sync_capture`; each loop is its kind's :meth:`~feltlab.rig.kinds.base.DeviceKind.
collect`, in the kind's package), the lab's freshness state (:func:`freshness_store`) and the
host's timing calibration around a part (:func:`watch_host`,
:func:`calibrate_after`).  :func:`feltlab.rig.certify.campaign.collect_part` drives them."""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import logging
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from feltlab.rig.bus.writer import CaptureWriter
from feltlab.rig.certify.binding import campaign_key, record_freshness_start
from feltlab.rig.certify.faults import (
    FaultPlan,
    fault_plan,
)
from feltlab.rig.certify.profile import CampaignError, Profile
from feltlab.rig.certify.uncertainty import (
    HostMonitor,
    HostUncertainty,
    calibrate_into,
    read_calibrations,
    record_calibration,
)
from feltlab.rig.clock import SIM_EPOCH, Clock, RealClock, SimClock
from feltlab.rig.devices import make_device
from feltlab.rig.devices.misbehaviour import MisbehaviourPlan
from feltlab.rig.protocol.freshness import FreshnessStore
from feltlab.seeds import part_seed

log = logging.getLogger("feltlab.rig.certify")  # the campaign's logger, as before the split

PART_SPACING = 1_000_000.0
"""Simulated seconds between the starts of two collection parts (11.6 days)."""


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

    ``device_on_host``: the device on ``bus`` runs on this same host (e.g. ``feltlab device
    run``); real-time timing verdicts then count the host's scheduling latency on the
    device's side as well (:mod:`feltlab.rig.certify.uncertainty`).

    ``simulator``: the simulated device's class instead of its kind's (a subclass of it);
    ``device_plan``: the misbehaviour plan the simulated device consults (the explorer's
    misbehaving devices); ``plots``: draw the report's plots (the explorer, which
    runs thousands of campaigns, does not); ``ahead``: fork the helper process that computes
    power and plots during collection (:class:`feltlab.rig.certify.ahead.AheadWorker`; None:
    unless this process has imported matplotlib already).
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
    device_on_host: bool = False
    simulator: type[Any] | None = field(default=None, compare=False)
    plots: bool = True
    ahead: bool | None = None
    device_plan: MisbehaviourPlan | None = field(default=None, compare=False)

    @property
    def simulated(self) -> bool:
        return self.bus is None or self.model is not None

    @property
    def device_shares_host(self) -> bool:
        """The device under test runs on the certifying host: a simulated device the rig
        runs itself, or ``device_on_host`` (one started with ``feltlab device run`` here).
        In real time its own timing then carries the host's scheduling latency too
        (:mod:`feltlab.rig.certify.uncertainty`)."""
        return self.simulated or self.device_on_host

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
    #: listener and capture-writer errors (:meth:`feltlab.rig.bus.transport.Node.stats`)
    bus: dict[str, Any] = field(default_factory=dict)
    #: replies the client discarded as answering no request in flight (protocol 2.0)
    stale_replies: int = 0
    #: declared limits the device went beyond: (what, value s, limit s, message); a FAIL
    limits_exceeded: list[tuple[str, float, float, str]] = field(default_factory=list)
    #: this part's capture file name -> its frames as read back
    #: (:meth:`feltlab.rig.bus.writer.CaptureWriter.frames_as_read`), when the writer kept
    #: them: the analysis then does not parse the file it just wrote
    frames: dict[str, list[Any]] = field(default_factory=dict)
    #: (writer, part, capture path) of this part's closed capture, whose BLF may still be
    #: being written (:func:`feltlab.rig.certify.campaign.settle` waits for it, records it)
    closing: tuple[Any, int, Path] | None = None


def freshness_store(prof: Profile) -> FreshnessStore:
    """The lab's freshness state for ``prof``'s panel: ``[campaign] freshness_state`` and
    ``freshness_counter``, or their default locations (:mod:`feltlab.rig.protocol.freshness`)."""
    where = prof.campaign.get("freshness_state")
    counter = prof.campaign.get("freshness_counter")
    return FreshnessStore(
        Path(str(where)).expanduser() if where else None,
        Path(str(counter)).expanduser() if counter else None,
    )


def _journal_owner(directory: Path, part: int) -> dict[str, Any] | None:
    """What a part's journal names on its first line: its campaign (the id in the folder's
    campaign.json) and part; None outside a campaign folder."""
    try:
        cid = json.loads((directory / "campaign.json").read_text(encoding="utf-8"))["campaign_id"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(cid, str) or not cid.isalnum():
        return None
    return {"campaign": cid, "part": part}


def _chain_key(directory: Path, owner: dict[str, Any] | None) -> bytes | None:
    """The key of the part's journal chain: the campaign's (:mod:`feltlab.rig.certify.binding`);
    None outside a campaign folder."""
    if owner is None:
        return None

    state = json.loads((directory / "campaign.json").read_text(encoding="utf-8"))
    return campaign_key(state, strict=True)


def check_freshness(prof: Profile) -> None:
    """Before any collection of a keyed device's campaign: its key loads, the freshness
    state's and counter's folders are writable (else :class:`RigError` naming the one that is
    not), and the state matches its counter (else :class:`SecurityFault`: rolled back,
    deleted or edited)."""
    if not prof.device_kind.keyed:
        return
    key = prof.key()
    store = freshness_store(prof)
    store.ensure_writable(key)
    store.check(key)


def open_part(
    opts: CampaignOptions, capture: Path, part: int, seed: int, clock: Clock
) -> tuple[Any, Any, str]:
    """Start the simulated device (if any) and the client on ``clock``; returns (device,
    client, spec)."""
    prof = opts.profile
    kind = prof.device_kind
    spec = opts.bus
    if spec is None:
        rate = prof.device.get("bitrate")
        spec = f"interface=virtual,channel=feltlab-certify-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        if rate:
            spec += f",bitrate={int(rate)}"
    dev = None
    key = prof.key() if kind.keyed else None
    store = freshness_store(prof)
    last_fv = store.check(key) if key is not None else 0
    if opts.simulated:
        dev_opts = prof.device_options(simulated=True)
        extra: dict[str, Any] = {"seed": part_seed(seed, part)}
        if key is not None:  # the simulated panel's non-volatile draw count
            extra["draws"] = last_fv
        if opts.device_plan is not None:
            extra["plan"] = opts.device_plan
        if opts.model is not None:
            if not kind.models:
                raise CampaignError(f"--model applies to batch shufflers, not {prof.kind}")
            extra["model"] = opts.model
        dev = make_device(
            prof.kind, spec, dev_opts, simulator=opts.simulator, clock=clock, **extra
        ).start()
    kw: dict[str, Any] = {}
    if key is not None:
        kw = {
            "key": key,
            "require_auth": prof.authenticate,
            "freshness": last_fv,
            "persist": functools.partial(store.remember, key),  # before any result is shown
        }
        record_freshness_start(capture.parent, part, last_fv)  # bound to the campaign
    owner = _journal_owner(capture.parent, part)
    # the journal kept until the campaign has recorded the closed part (campaign.settle)
    writer = CaptureWriter(
        capture, owner=owner, chain_key=_chain_key(capture.parent, owner), keep_journal=True
    )
    try:
        client = kind.client(
            spec,
            base=prof.base,
            timeout=float(prof.campaign.get("timeout", 0.5)),
            capture=writer,
            heartbeat_period=prof.heartbeat_period,
            clock=clock,
            limits=prof.limits,
            **kw,
        )
    except BaseException:
        writer.stop()
        if dev is not None:
            dev.stop()
        raise
    if key is not None:  # what was accepted but never asked for: kept when the part ends
        client.freshness_keep = functools.partial(store.remember, key)
    return dev, client, spec


MIN_HEARTBEATS = 4
"""Heartbeats a part waits for before it closes (at most ``MIN_HEARTBEATS + 2`` periods),
so that ``heartbeat.period`` is measurable even from the smallest campaigns."""


def wait_heartbeats(client: Any, period: float, stop: threading.Event) -> None:
    """Wait (by the client's clock) for ``MIN_HEARTBEATS`` heartbeats, or for ``stop``."""
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
    if plan is not None and not prof.device_kind.fault_campaigns:
        raise CampaignError(
            f"fault campaigns drive batch shufflers in this version, not {prof.kind} devices "
            "(a jackpot panel's campaign injects its own faults: inject_faults)"
        )
    return plan


def wait_back(client: Any, timeout: float) -> bool:
    """Wait (bounded) until a lost device sends heartbeats again."""
    client.clock.wait(lambda: not client.lost, timeout)
    return not client.lost


@contextlib.contextmanager
def fewer_gc_passes() -> Iterator[None]:
    """A campaign allocates about ten short-lived objects a CAN frame and makes few reference
    cycles: the cyclic collector's youngest generation runs every 50,000 allocations instead
    of every 700 (7% of a simulated campaign's time went to it), then as before.

    The objects alive at the start (the imported modules' functions, classes and tables:
    some 57,000 in the demo) are frozen for the block (:func:`gc.freeze`), so the young
    collections the campaign's own objects trigger do not examine them again (0.05-0.07 s
    of the demo's CPU); they are unfrozen after it, into the oldest generation, so a cycle
    among them is still collected later.  Nothing is frozen or unfrozen when the process
    has frozen objects of its own (a server that froze before forking)."""
    before = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0
    gc.set_threshold(50_000, 20, 20)
    if freeze:
        gc.freeze()
    try:
        yield
    finally:
        if freeze:
            gc.unfreeze()
        gc.set_threshold(*before)


def sync_capture(client: Any, i: int, every: int) -> None:
    """After every ``every``-th sample (``i`` from 0), the capture's journal to stable
    storage (fsync): a power cut then keeps every sample completed before it."""
    if i % every == every - 1 and client.node.capture is not None:
        client.node.capture.sync()


@contextlib.contextmanager
def watch_host(out: Path, state: dict[str, Any], clock: Clock | None = None) -> Iterator[None]:
    """Around a collection part: calibrate the host's timing uncertainty before it (on the
    campaign's bus, :func:`feltlab.rig.certify.uncertainty.calibrate_into`) and sample the timer
    overshoot all through it (:class:`feltlab.rig.certify.uncertainty.HostMonitor`), both recorded
    in ``out/host-uncertainty.jsonl``.  ``clock``: the campaign's (default: a real clock of
    its own).  In simulated time (``clock.simulated``, or ``state["clock"] ==
    "sim"``) it records simulated time and measures nothing."""
    if state.get("clock") == "sim" or (clock is not None and clock.simulated):
        record_calibration(out, HostUncertainty.simulated_time("before"))
        yield
        return
    own = clock is None
    real: Clock = RealClock("feltlab-calibration") if clock is None else clock
    on_host = bool(state.get("device_on_host"))
    calibrate_into(out, real, state.get("bus"), when="before", device_on_host=on_host)
    monitor = HostMonitor(real, state.get("bus"), out, device_on_host=on_host).start()
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
    recorded = read_calibrations(out)
    if state.get("clock") == "sim" or any(c.simulated for c in recorded):
        return
    clock = RealClock("feltlab-calibration")
    try:
        calibrate_into(
            out,
            clock,
            state.get("bus"),
            when="after collection",
            device_on_host=bool(state.get("device_on_host")),
        )
    finally:
        clock.close()

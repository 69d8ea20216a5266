"""Collection of a certification campaign: :class:`CampaignOptions`, opening the device and
its client (:func:`open_part`), the collection loops of each device kind (``_collect_*``), the
Madness 21 part of a jackpot campaign, the lab's freshness state (:func:`freshness_store`)
and the host's timing calibration around a part (:func:`watch_host`,
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

import numpy as np

from feltlab import native
from feltlab.rig.bus.writer import CaptureWriter
from feltlab.rig.certify.faults import (
    FaultPlan,
    FaultRunner,
    fault_plan,
)
from feltlab.rig.certify.profile import CampaignError, Profile, Progress
from feltlab.rig.certify.uncertainty import read_calibrations
from feltlab.rig.clock import SIM_EPOCH, Clock, RealClock, SimClock
from feltlab.rig.errors import (
    DeviceLost,
    DeviceRefused,
    LimitExceeded,
    RigError,
    SecurityFault,
)
from feltlab.rig.protocol.codec import Result
from feltlab.rig.protocol.freshness import (
    FRESHNESS_STARTS,
    FreshnessStore,
    freshness_starts,
)
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

    ``simulator``: the simulated device's class instead of its kind's (a subclass of it: the
    explorer's misbehaving devices); ``plots``: draw the report's plots (the explorer, which
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
    #: (:meth:`feltlab.rig.bus.capture.CaptureWriter.frames_as_read`), when the writer kept
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
    from feltlab.rig.certify.binding import campaign_key

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
    from feltlab.rig.devices import make_device

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
        starts = freshness_starts(capture.parent)
        starts[part] = last_fv
        (capture.parent / FRESHNESS_STARTS).write_text(json.dumps(starts, sort_keys=True))
    owner = _journal_owner(capture.parent, part)
    writer = CaptureWriter(capture, owner=owner, chain_key=_chain_key(capture.parent, owner))
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


def _wait_back(client: Any, timeout: float) -> bool:
    """Wait (bounded) until a lost device sends heartbeats again."""
    client.clock.wait(lambda: not client.lost, timeout)
    return not client.lost


@contextlib.contextmanager
def fewer_gc_passes() -> Iterator[None]:
    """A campaign allocates about ten short-lived objects a CAN frame and makes few reference
    cycles: the cyclic collector's youngest generation runs every 50,000 allocations instead
    of every 700 (7% of a simulated campaign's time went to it), then as before."""
    before = gc.get_threshold()
    gc.set_threshold(50_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def collect_batch(
    opts: CampaignOptions,
    client: Any,
    want: int,
    result: Collected,
    progress: Progress,
    stop: threading.Event,
    faults: FaultRunner | None = None,
    *,
    directory: Path | None = None,
    part: int = 1,
) -> None:
    """Collect ``want`` shoes (a :class:`feltlab.rig.kinds.Collect`).  A shoe that fails is
    collected again: after a lost device comes back (within the plan's recovery timeout, else
    the part stops with an error), after a refused SHUFFLE (the fault is cleared) and after a
    failed read; after a reboot the input order is loaded again."""
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
        sync_capture(client, i, 100)
        progress.advance()


def sync_capture(client: Any, i: int, every: int) -> None:
    """After every ``every``-th sample (``i`` from 0), the capture's journal to stable
    storage (fsync): a power cut then keeps every sample completed before it."""
    if i % every == every - 1 and client.node.capture is not None:
        client.node.capture.sync()


def collect_continuous(
    opts: CampaignOptions,
    client: Any,
    want: int,
    result: Collected,
    progress: Progress,
    stop: threading.Event,
    *,
    faults: FaultRunner | None = None,
    directory: Path | None = None,
    part: int = 1,
) -> None:
    """Deal and return ``want`` cards (a :class:`feltlab.rig.kinds.Collect`)."""
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
        sync_capture(client, i, 1000)  # a card is a sample: every 1,000 cards
        progress.advance()


MAX_REFUSED_IN_A_ROW = 3
"""Refused results (a security fault each) a jackpot collection draws past before it stops:
one is a round voided, more in a row a panel that cannot be certified as it stands."""


def collect_jackpot(
    opts: CampaignOptions,
    client: Any,
    want: int,
    result: Collected,
    progress: Progress,
    stop: threading.Event,
    *,
    faults: FaultRunner | None = None,
    directory: Path,
    part: int,
) -> None:
    """Draw ``want`` prizes (a :class:`feltlab.rig.kinds.Collect`)."""
    camp = opts.profile.campaign
    box = int(camp.get("box", 1))
    every = max(1, int(camp.get("ping_every", 5)))
    client.prize_table()
    progress.start("drawing prizes", want)
    round_base = part * 1_000_000
    forge_at = want // 2 if camp.get("inject_faults", True) and client.require_auth else -1
    i = refused = 0
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
            if trial is not None and i <= forge_at + 3:
                log.info("the forged result was refused: %s", exc)
            else:
                # refused (replayed, forged, ...): the round is void (rule 16.12), the
                # refusal is in the capture and so in the record; the next round is drawn
                refused += 1
                if exc.reason == "tampered" or refused > MAX_REFUSED_IN_A_ROW:
                    raise
                log.error("round %d: %s; the next round is drawn", round_base + i, exc)
            i += 1
            continue
        finally:
            if trial is not None:
                _end_forgery(client, trial, directory)
        refused = 0
        client.display(cents)
        result.done += 1
        if i % every == 0:
            client.ping()
        sync_capture(client, i, 100)
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
    import hashlib

    t0 = trial["injected_at"]
    ev = next((e for e in list(client.events) if e.kind == "security" and e.timestamp >= t0), None)
    now = client.clock.wall()
    row = {
        "fault": "forge_result",
        "sample": -1,
        "injected_at": trial["injected_at"],
        "shoes_before": 0,
        "digest_before": hashlib.sha256().hexdigest(),
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
    from feltlab.engine import StandPolicy, Table, play_round
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

    play_round(table, bets, StandPolicy())
    client.inject_fault("display")
    play_round(table, bets, StandPolicy())
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


@contextlib.contextmanager
def watch_host(out: Path, state: dict[str, Any], clock: Clock | None = None) -> Iterator[None]:
    """Around a collection part: calibrate the host's timing uncertainty before it (on the
    campaign's bus, :func:`feltlab.rig.certify.uncertainty.calibrate_into`) and sample the timer
    overshoot all through it (:class:`feltlab.rig.certify.uncertainty.HostMonitor`), both recorded
    in ``out/host-uncertainty.jsonl``.  ``clock``: the campaign's (default: a real clock of
    its own).  In simulated time (``clock.simulated``, or ``state["clock"] ==
    "sim"``) it records simulated time and measures nothing."""
    from feltlab.rig.certify.uncertainty import (
        HostMonitor,
        HostUncertainty,
        calibrate_into,
        record_calibration,
    )
    from feltlab.rig.clock import RealClock

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
    from feltlab.rig.certify.uncertainty import calibrate_into
    from feltlab.rig.clock import RealClock

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

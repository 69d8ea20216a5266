"""The state feed of the live view (``feltlab certify --live``, ``feltlab view --live``).

A :class:`LiveFeed` holds the latest snapshot of a campaign, a JSON-serialisable dict, and a
version number; the campaign thread publishes, the server thread (:mod:`feltlab.rig.live_server`)
reads, both under one lock.  A :class:`CampaignObserver` is what
:func:`feltlab.rig.certify.run_campaign` reports to (its ``live`` argument): the campaign's
options, the progress of each phase, the client and bus it collects with (device events from
the client's ``on_event``, the client's counters, the :class:`feltlab.rig.transport.RigBus`
frame counters) and, from the frames on the node, the latencies so far (request to reply,
as the analysis pairs them from the capture).  At the end it publishes the record's verdict.

Interim figures are never a verdict: every snapshot before the end says so (``interim``),
and the verdict comes only from the record that :func:`~feltlab.rig.certify.finish` writes.

Snapshot shape (``SCHEMA`` 1; times in seconds, rates in frames or bits per second)::

    {"schema": 1, "version": int, "state": "starting"|"collecting"|"analysing"|"finished"
     |"interrupted"|"failed", "interim": bool, "phase": str,
     "campaign": {"id", "kind", "device", "profile", "seed", "size", "unit", "clock",
                  "clock_description", "directory", "bus"},
     "progress": {"done", "total", "fraction", "wall_elapsed_s", "wall_left_s",
                  "clock_elapsed_s", "clock_left_s"},
     "device": {"online", "lost", "heartbeats", "heartbeats_missed", "reboots", "faults",
                "faults_active", "malformed", "stale_replies", "transfer_errors",
                "retransmissions", "last_heartbeat"},
     "bus": {"frames_sent", "frames_received", "frames_lost", "bitrate", "bits", "load"},
     "latencies": {name: {"n", "p50", "p95", "p99", "max", "edges", "counts"}},
     "samples": {"collected", "missing", "missing_list"},
     "host_uncertainty": dict | None, "events": [{"t", "kind", "text"}],
     "verdict": str | None, "checks": [{"name", "value", "unit", "limits", "verdict"}],
     "errors": [str], "report": str | None}
"""

from __future__ import annotations

import copy
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

SCHEMA = 1
UNITS = {"batch": "shoes", "continuous": "deals", "jackpot": "draws"}
#: the verdict strings a record can carry (issue 13's per-check verdicts included)
VERDICTS = ("PASS", "FAIL", "ERROR", "INCONCLUSIVE", "ABORTED")
MAX_EVENTS = 200
MAX_SAMPLES = 200_000
HIST_BINS = 24
#: standard CAN 2.0A frame bits before stuffing: SOF, 11-bit id, RTR, IDE, r0, DLC (4),
#: CRC (15) and its delimiter, ACK slot and delimiter, EOF (7), intermission (3)
FRAME_OVERHEAD_BITS = 47


def empty_snapshot() -> dict[str, Any]:
    """A snapshot with every key present and nothing known yet."""
    return {
        "schema": SCHEMA,
        "version": 0,
        "state": "starting",
        "interim": True,
        "phase": "starting",
        "campaign": {},
        "progress": {
            "done": 0,
            "total": None,
            "fraction": 0.0,
            "wall_elapsed_s": 0.0,
            "wall_left_s": None,
            "clock_elapsed_s": 0.0,
            "clock_left_s": None,
        },
        "device": {},
        "bus": {},
        "latencies": {},
        "samples": {"collected": 0, "missing": 0, "missing_list": []},
        "host_uncertainty": None,
        "events": [],
        "verdict": None,
        "checks": [],
        "errors": [],
        "report": None,
    }


class LiveFeed:
    """The latest snapshot and its version, shared between the campaign and the server.

    :meth:`publish` replaces the snapshot (a deep copy is kept) and wakes every waiter;
    :meth:`get` returns ``(version, snapshot)``; :meth:`subscribe` registers a callback run
    (on the publishing thread) after each publish; the server uses it to wake its loop
    thread-safely.  ``refresh``, when set, is called by :meth:`poll` to publish a fresh
    snapshot between campaign events (a shoe that takes minutes on a real shuffler).
    """

    def __init__(self, snapshot: dict[str, Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._snap = copy.deepcopy(snapshot) if snapshot is not None else empty_snapshot()
        self._version = int(self._snap.get("version", 0))
        self._subscribers: list[Callable[[], None]] = []
        self.refresh: Callable[[], None] | None = None
        self.done = threading.Event()

    def publish(self, snapshot: Mapping[str, Any], *, final: bool = False) -> int:
        """Replace the snapshot; returns its new version.  ``final`` marks the campaign over."""
        with self._lock:
            self._version += 1
            snap = copy.deepcopy(dict(snapshot))
            snap["version"] = self._version
            self._snap = snap
            subs = list(self._subscribers)
            version = self._version
        if final:
            self.done.set()
        for fn in subs:
            try:
                fn()
            except Exception:  # a closed loop must never stop the campaign
                log.debug("live feed subscriber failed", exc_info=True)
        return version

    def get(self) -> tuple[int, dict[str, Any]]:
        """``(version, snapshot)``; the snapshot is the feed's own copy: do not change it."""
        with self._lock:
            return self._version, self._snap

    def poll(self) -> None:
        """Ask the observer (if any) for a fresh snapshot; never raises."""
        fn = self.refresh
        if fn is not None and not self.done.is_set():
            try:
                fn()
            except Exception:
                log.debug("live refresh failed", exc_info=True)

    def subscribe(self, fn: Callable[[], None]) -> None:
        with self._lock:
            self._subscribers.append(fn)

    def unsubscribe(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if fn in self._subscribers:
                self._subscribers.remove(fn)


def histogram(samples: Iterable[float], bins: int = HIST_BINS) -> dict[str, Any]:
    """Percentiles and a histogram of durations in seconds: ``n``, ``p50``, ``p95``, ``p99``,
    ``max`` (s; None when empty), ``edges`` (``bins + 1`` bin edges, s), ``counts``
    (``bins`` ints) and ``scale``: ``"log"`` (log-spaced edges, so that a few slow outliers
    do not squeeze the rest into one bin) when the samples span more than a factor of 10,
    else ``"linear"``.  Non-finite samples are left out."""
    a = np.asarray(list(samples), dtype=np.float64)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return {
            "n": 0,
            "p50": None,
            "p95": None,
            "p99": None,
            "max": None,
            "edges": [],
            "counts": [],
            "scale": "linear",
        }
    lo, hi = float(a.min()), float(a.max())
    if hi <= lo:
        hi = lo + max(abs(lo) * 1e-3, 1e-6)
    scale = "log" if lo > 0 and hi / lo > 10 else "linear"
    grid = np.geomspace(lo, hi, bins + 1) if scale == "log" else np.linspace(lo, hi, bins + 1)
    counts, edges = np.histogram(a, bins=grid)
    p50, p95, p99 = (float(x) for x in np.percentile(a, [50, 95, 99]))
    return {
        "n": int(a.size),
        "p50": p50,
        "p95": p95,
        "p99": p99,
        "max": float(a.max()),
        "edges": [float(e) for e in edges],
        "counts": [int(c) for c in counts],
        "scale": scale,
    }


def _finite(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def describe_event(kind: str, detail: Mapping[str, Any]) -> str:
    """A one-line description of a client event (``kind`` and its ``detail``); a fault with
    its code and severity named from the protocol's enums."""
    if kind == "fault":
        from feltlab.rig.protocol import Severity

        try:
            sev = Severity(int(detail.get("severity", -1))).name
        except ValueError:
            sev = str(detail.get("severity"))
        state = "raised" if detail.get("active") else "cleared"
        return (
            f"fault {_fault_name(int(detail.get('code', -1)))} {state} (severity {sev}, "
            f"detail {detail.get('detail', 0)})"
        )
    if not detail:
        return kind
    return kind + " (" + ", ".join(f"{k} {v}" for k, v in detail.items()) + ")"


class LatencyTracker:
    """Latencies so far from the frames on a node, paired as the analysis pairs them in
    the capture (protocol 2.0: a reply carries its request id): ``round_trip.<OPCODE>``
    from a Command to its Ack, ``shuffle_cycle`` from SHUFFLE to the Status READY that
    answers it, ``first_card`` from READ_SHOE to the first frame of the shoe's transfer.
    Frames are counted for the bus load (bits before stuffing).  Thread-safe."""

    def __init__(self, codec: Any, base: int) -> None:
        from feltlab.rig.protocol import Channel, Opcode, State

        self.codec = codec
        self.base = base
        self._op = Opcode
        self._ready = int(State.READY)
        self._shoe_id = base + int(Channel.SHOE)
        self._lock = threading.Lock()
        self._sent: dict[tuple[int, int], float] = {}
        self._shuffle: dict[int, float] = {}
        self._read: dict[int, float] = {}
        self._deal: dict[int, float] = {}
        self._button: dict[tuple[int, int], float] = {}
        self.samples: dict[str, deque[float]] = {}
        self.bits = 0
        self.frames = 0

    def _add(self, name: str, value: float) -> None:
        if value >= 0:
            self.samples.setdefault(name, deque(maxlen=MAX_SAMPLES)).append(value)

    def on_message(self, msg: Any) -> None:
        """A frame sent or received on the node (a python-can listener); never raises."""
        try:
            self._feed(msg)
        except Exception:  # a frame the protocol refuses: the client counts it
            log.debug("live: frame 0x%03X not decoded", msg.arbitration_id, exc_info=True)

    def _feed(self, msg: Any) -> None:
        t = float(msg.timestamp)
        with self._lock:
            self.frames += 1
            self.bits += FRAME_OVERHEAD_BITS + 8 * len(msg.data) + (20 if msg.is_extended_id else 0)
            arb = msg.arbitration_id
            if arb == self._shoe_id and msg.data and msg.data[0] >> 4 in (0, 1):
                for rid, asked in list(self._read.items()):
                    self._add("first_card", t - asked)
                    del self._read[rid]
                return
            frame = self.codec.decode(msg)
            if frame is None:
                return
            s = frame.signals
            if frame.name == "Command":
                rid, op = int(s["RequestId"]), int(s["Opcode"])
                self._sent.setdefault((rid, op), t)
                if op == self._op.SHUFFLE:
                    self._shuffle.setdefault(rid, t)
                elif op == self._op.READ_SHOE:
                    self._read.setdefault(rid, t)
                elif op == self._op.DEAL:
                    self._deal.setdefault(rid, t)
            elif frame.name == "Ack":
                key = (int(s["RequestId"]), int(s["Opcode"]))
                sent = self._sent.pop(key, None)
                if sent is not None:
                    try:
                        op_name = self._op(key[1]).name
                    except ValueError:
                        op_name = f"OP{key[1]}"
                    self._add(f"round_trip.{op_name}", t - sent)
            elif frame.name == "Card":
                deal_sent = self._deal.pop(int(s["RequestId"]), None)
                if deal_sent is not None:
                    self._add("deal", t - deal_sent)
            elif frame.name == "JackpotButton":
                self._button[(int(s["Box"]), int(s["RoundId"]) & 0xFF)] = t
            elif frame.name == "JackpotResult":
                pressed = self._button.pop((int(s["Box"]), int(s["RoundTag"])), None)
                if pressed is not None:
                    self._add("button_to_result", t - pressed)
            elif frame.name == "Status" and int(s.get("State", -1)) == self._ready:
                started = self._shuffle.pop(int(s["RequestId"]), None)
                if started is not None:
                    self._add("shuffle_cycle", t - started)

    def summary(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            copies = {k: list(v) for k, v in self.samples.items()}
        return {k: histogram(v) for k, v in sorted(copies.items())}


def checks_of(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every verdict of a record as rows ``{"name", "value", "unit", "limits", "verdict"}``:
    the battery's checks, then the measurements (the record's shape, rig/certify.py
    ``build_record``; verdict strings are passed through as they are)."""
    rows: list[dict[str, Any]] = []
    bat = record.get("battery") or {}
    for c in bat.get("checks", []) or []:
        stat = c.get("statistic")
        adj = c.get("adjusted_p")
        rows.append(
            {
                "name": f"battery.{c.get('name')}",
                "value": None if stat is None else f"{c.get('statistic_name', '')} = {stat:.4g}",
                "unit": "",
                "limits": None if adj is None else f"p = {adj:.3g} (Holm)",
                "verdict": str(c.get("verdict")),
            }
        )
    for m in record.get("measurements", []) or []:
        value = m.get("value")
        lo, hi = m.get("low"), m.get("high")
        limits = None
        if lo is not None or hi is not None:
            limits = f"[{'' if lo is None else f'{lo:.4g}'}, {'' if hi is None else f'{hi:.4g}'}]"
        reason = (m.get("detail") or {}).get("reason")
        rows.append(
            {
                "name": str(m.get("name")),
                "value": None if value is None else f"{value:.4g}",
                "unit": str(m.get("unit") or ""),
                "limits": limits,
                "verdict": str(m.get("verdict")),
                "reason": reason,
            }
        )
    return rows


def apply_record(snap: dict[str, Any], record: Mapping[str, Any], directory: Path | None) -> None:
    """Fill ``snap`` with a finished record: the verdict, every check, the collection, the
    host's timing uncertainty (``host_uncertainty``, when the record has it) and the link
    to the report when ``directory`` holds ``report.html``."""
    verdict = str(record.get("verdict"))
    snap["verdict"] = verdict
    snap["interim"] = False
    snap["state"] = "interrupted" if verdict == "ABORTED" else "finished"
    snap["phase"] = "finished"
    snap["checks"] = checks_of(record)
    snap["errors"] = [str(e) for e in record.get("errors", []) or []]
    if record.get("host_uncertainty") is not None:
        snap["host_uncertainty"] = record["host_uncertainty"]
    coll = record.get("collection") or {}
    if coll:
        have = coll.get("collected")
        snap["samples"] = {
            "collected": have,
            "missing": coll.get("missing_count"),
            "missing_list": [list(x) for x in (coll.get("missing") or [])][:50],
        }
        prog = snap.setdefault("progress", {})
        if coll.get("requested") is not None:
            prog["total"] = coll["requested"]
        if have is not None:
            prog["done"] = have
            total = prog.get("total") or 0
            prog["fraction"] = min(1.0, have / total) if total else 1.0
        prog["wall_left_s"] = 0.0
        prog["clock_left_s"] = 0.0
    camp = snap.setdefault("campaign", {})
    dev = record.get("device") or {}
    camp.setdefault("id", record.get("campaign_id"))
    camp.setdefault("kind", record.get("kind"))
    camp["device"] = dev.get("name", camp.get("device"))
    camp.setdefault("profile", dev.get("profile_name"))
    camp.setdefault("seed", record.get("seed"))
    clock = record.get("clock") or {}
    if clock:
        camp["clock"] = clock.get("mode")
        camp["clock_description"] = clock.get("description")
    if directory is not None and (directory / "report.html").is_file():
        snap["report"] = "report/report.html"


class CampaignObserver:
    """What a campaign reports to for the live view (``run_campaign(..., live=observer)``).

    Every method is called on the campaign thread and never raises into the campaign.
    Snapshots are published at most every ``every`` wall seconds while collecting (and by
    :meth:`LiveFeed.poll` between samples), and at once on each phase change and at the end.
    """

    def __init__(self, feed: LiveFeed, *, every: float = 0.1) -> None:
        self.feed = feed
        self.every = every
        self._lock = threading.RLock()
        self._snap = empty_snapshot()
        self._client: Any = None
        self._tracker: LatencyTracker | None = None
        self._clock: Any = None
        self._t0 = time.monotonic()
        self._c0: float | None = None
        self._phase_t0 = time.monotonic()
        self._phase_c0: float | None = None
        self._last_pub = 0.0
        self._collecting = False
        self._done = 0
        self._total: int | None = None
        self._have = 0
        self._events: deque[dict[str, Any]] = deque(maxlen=MAX_EVENTS)
        self._last_bus: tuple[float, int] | None = None
        feed.refresh = self.refresh

    # ------------------------------------------------------------ campaign hooks
    def campaign_started(self, state: Mapping[str, Any], directory: Path) -> None:
        """The campaign's ``campaign.json`` state is written: who, what, how many."""
        from feltlab.rig.certify import clock_record, device_name, profile_from_dict

        with self._lock:
            prof = (state.get("profile") or {}).get("data") or {}
            kind = str(state.get("kind"))
            clock = clock_record(dict(state))
            try:
                name = device_name(
                    profile_from_dict(prof, (state.get("profile") or {}).get("path")),
                    dict(state),
                )
            except Exception:  # the name is informative only
                name = str(prof.get("name") or kind)
            self._snap["campaign"] = {
                "id": state.get("campaign_id"),
                "kind": kind,
                "device": name,
                "profile": (state.get("profile") or {}).get("path"),
                "seed": state.get("seed"),
                "size": state.get("size"),
                "unit": UNITS.get(kind, "samples"),
                "clock": clock["mode"],
                "clock_description": clock["description"],
                "directory": str(directory),
                "bus": state.get("bus") or "in-process virtual bus",
            }
            self._total = int(state.get("size") or 0) or None
            self._snap["progress"]["total"] = self._total
        self._publish(force=True)

    def already_collected(self, have: int) -> None:
        """A resumed campaign: ``have`` samples are in the capture of earlier parts."""
        with self._lock:
            self._have = int(have)
        self._publish(force=True)

    def attach(self, client: Any, device: Any, clock: Any) -> None:
        """The collection part's client is open (before it waits for the device)."""
        with self._lock:
            self._client = client
            self._clock = clock
            self._c0 = float(clock.now())
            self._tracker = LatencyTracker(client.codec, client.base)
            prev = client.on_event

            def on_event(ev: Any) -> None:
                self._on_event(ev)
                if prev is not None:
                    prev(ev)

            client.on_event = on_event
            node = client.node
            node.add_listener(self._tracker.on_message)
            node.bus.tx_listeners.append(self._tracker.on_message)
        self._publish(force=True)

    def detach(self, done: int, missing: Iterable[tuple[int, str]]) -> None:
        """The collection part ends (before the client closes): the last figures."""
        with self._lock:
            self._read_client()
            self._have += int(done)
            self._done = 0
            miss = list(missing)
            self._snap["samples"]["missing"] = len(miss)
            self._snap["samples"]["missing_list"] = [[int(i), str(r)] for i, r in miss[:50]]
            self._snap["samples"]["collected"] = self._have
            client, tracker = self._client, self._tracker
            self._client = None
            self._collecting = False
        if client is not None and tracker is not None:
            try:
                client.node.bus.tx_listeners.remove(tracker.on_message)
                client.node.notifier.remove_listener(tracker.on_message)
            except (ValueError, AttributeError):
                pass
        self._publish(force=True)

    def progress(self, inner: Any) -> _ObservedProgress:
        """Wrap a :class:`feltlab.rig.certify.Progress` so that this observer sees it."""
        return _ObservedProgress(self, inner)

    def analysing(self) -> None:
        with self._lock:
            self._snap["state"] = "analysing"
            self._snap["phase"] = "analysing the capture"
        self._publish(force=True)

    def finished(self, record: Mapping[str, Any], directory: Path) -> None:
        """The record is written: publish the verdict (final)."""
        with self._lock:
            apply_record(self._snap, record, directory)
            self._snap["device"]["lost"] = bool(self._snap["device"].get("lost"))
        self._publish(force=True, final=True)

    def failed(self, message: str) -> None:
        """The campaign stopped without a record (an error before or during it)."""
        with self._lock:
            self._snap["state"] = "failed"
            self._snap["interim"] = False
            self._snap["errors"] = [*self._snap.get("errors", []), message]
        self._publish(force=True, final=True)

    # ------------------------------------------------------------ progress
    def _start(self, description: str, total: int | None) -> None:
        with self._lock:
            self._snap["phase"] = description
            self._collecting = description.startswith(("collecting", "dealing", "drawing"))
            if self._collecting:
                self._snap["state"] = "collecting"
                self._done = 0
                self._phase_t0 = time.monotonic()
                self._phase_c0 = float(self._clock.now()) if self._clock is not None else None
            elif description.startswith("analysing"):
                self._snap["state"] = "analysing"
        self._publish(force=True)

    def _advance(self, n: int) -> None:
        if self._collecting:
            with self._lock:
                self._done += n
        self._publish()

    # ------------------------------------------------------------ snapshots
    def _on_event(self, ev: Any) -> None:
        with self._lock:
            self._events.append(
                {
                    "t": float(ev.timestamp),
                    "kind": str(ev.kind),
                    "text": describe_event(ev.kind, dict(ev.detail)),
                }
            )

    def _read_client(self) -> None:
        client = self._client
        if client is None:
            return
        events = list(client.events)
        kinds: dict[str, int] = {}
        active: dict[int, dict[str, Any]] = {}
        for e in events:
            kinds[e.kind] = kinds.get(e.kind, 0) + 1
            if e.kind == "fault":
                code = int(e.detail.get("code", -1))
                if e.detail.get("active"):
                    active[code] = dict(e.detail)
                else:
                    active.pop(code, None)
        hb = client.heartbeat
        self._snap["device"] = {
            "online": hb is not None,
            "lost": bool(client.lost),
            "heartbeats": int(client.counts.get("Heartbeat", 0)),
            "heartbeats_missed": int(client.heartbeats_missed),
            "reboots": kinds.get("reboot", 0),
            "faults": kinds.get("fault", 0),
            "faults_active": [_fault_name(c) for c in sorted(active)],
            "malformed": int(client.decode_errors) + kinds.get("payload_error", 0),
            "stale_replies": int(getattr(client, "stale_replies", 0)),
            "transfer_errors": kinds.get("transfer_error", 0),
            "retransmissions": int(client.retransmissions),
            "last_heartbeat": {k: int(v) for k, v in hb.signals.items()} if hb else None,
        }
        bus = client.node.bus
        tracker = self._tracker
        now_c = float(self._clock.now()) if self._clock is not None else 0.0
        bits = tracker.bits if tracker else 0
        bitrate = getattr(client.node, "bitrate", None)
        load = None
        if bitrate and self._last_bus is not None:
            dt = now_c - self._last_bus[0]
            if dt > 0:
                load = min(1.0, (bits - self._last_bus[1]) / (dt * bitrate))
        elif bitrate and self._c0 is not None and now_c > self._c0:
            load = min(1.0, bits / ((now_c - self._c0) * bitrate))
        if load is None:
            load = self._snap.get("bus", {}).get("load")
        if self._last_bus is None or now_c - self._last_bus[0] >= 1.0:
            self._last_bus = (now_c, bits)
        self._snap["bus"] = {
            "frames_sent": int(bus.frames_sent),
            "frames_received": int(bus.frames_received),
            "frames_lost": int(bus.frames_lost),
            "bitrate": bitrate,
            "bits": bits,
            "load": load,
        }
        if tracker is not None:
            self._snap["latencies"] = tracker.summary()

    def _build(self) -> None:
        self._read_client()
        snap = self._snap
        snap["events"] = list(self._events)[-50:]
        prog = snap["progress"]
        total = self._total
        done = self._have + self._done
        prog["done"] = done
        prog["total"] = total
        prog["fraction"] = min(1.0, done / total) if total else 0.0
        prog["wall_elapsed_s"] = time.monotonic() - self._t0
        if self._clock is not None and self._c0 is not None:
            prog["clock_elapsed_s"] = float(self._clock.now()) - self._c0
        left = None if total is None else max(0, total - done)
        if self._collecting and self._done > 0 and left is not None:
            wall = time.monotonic() - self._phase_t0
            prog["wall_left_s"] = wall / self._done * left
            if self._clock is not None and self._phase_c0 is not None:
                clk = float(self._clock.now()) - self._phase_c0
                prog["clock_left_s"] = clk / self._done * left
        snap["samples"]["collected"] = done

    def refresh(self) -> None:
        """Publish a fresh snapshot now (the server's poll between samples)."""
        self._publish(force=True)

    def _publish(self, *, force: bool = False, final: bool = False) -> None:
        try:
            now = time.monotonic()
            if not force and now - self._last_pub < self.every:
                return
            with self._lock:
                if self.feed.done.is_set() and not final:
                    return
                self._last_pub = now
                if not final:
                    self._build()
                snap = _json_safe(self._snap)
            self.feed.publish(snap, final=final)
        except Exception:  # the live view must never stop a campaign
            log.warning("live view: snapshot failed", exc_info=True)


def _fault_name(code: int) -> str:
    from feltlab.rig.protocol import FaultCode

    try:
        return FaultCode(code).name
    except ValueError:
        return f"code {code}"


def _json_safe(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple | deque):
        return [_json_safe(v) for v in x]
    if isinstance(x, np.generic):
        return _finite(x.item())
    if isinstance(x, Path):
        return str(x)
    return _finite(x)


class _ObservedProgress:
    """A Progress that tells a :class:`CampaignObserver` and then its inner Progress."""

    def __init__(self, observer: CampaignObserver, inner: Any) -> None:
        self.observer = observer
        self.inner = inner

    def start(self, description: str, total: int | None) -> None:
        self.inner.start(description, total)
        self.observer._start(description, total)

    def advance(self, n: int = 1) -> None:
        self.inner.advance(n)
        self.observer._advance(n)


def snapshot_from_directory(directory: Path) -> dict[str, Any]:
    """The snapshot of a finished or interrupted campaign in ``directory``: its record
    (``record.json``) when there is one, else ``campaign.json``; the device's counters and
    the latency histograms from its capture (every ``capture-NNN.blf``).

    Raises :class:`feltlab.rig.errors.RigError` when ``directory`` holds no campaign.
    """
    import json

    from feltlab.rig.certify import SIZE_KEY, clock_record, profile_from_dict
    from feltlab.rig.certify_capture import read_campaign_capture
    from feltlab.rig.errors import RigError

    state_path = directory / "campaign.json"
    record_path = directory / "record.json"
    if not directory.is_dir():
        raise RigError(f"{directory} is not a directory: give a campaign's --out directory")
    if not state_path.is_file() and not record_path.is_file():
        raise RigError(
            f"{directory} holds no campaign (no campaign.json or record.json): give a "
            "campaign's --out directory"
        )
    try:
        state = json.loads(state_path.read_text()) if state_path.is_file() else {}
        record = json.loads(record_path.read_text()) if record_path.is_file() else None
    except (OSError, ValueError) as exc:
        raise RigError(f"{directory}: cannot read the campaign's JSON ({exc})") from exc
    snap = empty_snapshot()
    kind = str(state.get("kind") or (record or {}).get("kind") or "batch")
    prof_data = (state.get("profile") or {}).get("data") or (record or {}).get("profile", {}).get(
        "data"
    )
    clock = clock_record(state) if state else (record or {}).get("clock") or {}
    snap["campaign"] = {
        "id": state.get("campaign_id"),
        "kind": kind,
        "device": (prof_data or {}).get("name") or kind,
        "profile": (state.get("profile") or {}).get("path"),
        "seed": state.get("seed"),
        "size": state.get("size"),
        "unit": UNITS.get(kind, "samples"),
        "clock": clock.get("mode"),
        "clock_description": clock.get("description"),
        "directory": str(directory),
        "bus": state.get("bus") or "in-process virtual bus",
    }
    snap["progress"]["total"] = state.get("size")
    captures = sorted(directory.glob("capture-[0-9][0-9][0-9].blf"))
    if captures and prof_data:
        try:
            prof = profile_from_dict(prof_data, (state.get("profile") or {}).get("path"))
            data = read_campaign_capture(captures, prof.base)
            _apply_capture(snap, data, kind)
        except (RigError, ValueError, OSError, EOFError) as exc:
            snap["errors"].append(f"capture: {exc}")
    if record is not None:
        apply_record(snap, record, directory)
    else:
        have = snap["samples"]["collected"]
        size = state.get("size")
        snap["state"] = "interrupted"
        snap["phase"] = "interrupted: no record was written"
        snap["samples"]["missing"] = None if size is None else max(0, int(size) - have)
        snap["errors"].append(
            f"no record: the campaign was interrupted with {have} of {size} "
            f"{SIZE_KEY.get(kind, 'samples')} in the capture; continue it with feltlab "
            f"certify {'jackpot-panel' if kind == 'jackpot' else 'shuffler'} --resume {directory}"
        )
    return _json_safe(snap)  # type: ignore[no-any-return]


def _apply_capture(snap: dict[str, Any], data: Any, kind: str) -> None:
    """The device's counters and the latency histograms of a capture (CaptureData)."""
    from feltlab.rig.certify import _count_samples

    have = _count_samples(data, kind)
    snap["samples"]["collected"] = have
    snap["progress"]["done"] = have
    total = snap["progress"].get("total")
    snap["progress"]["fraction"] = min(1.0, have / total) if total else 0.0
    gaps = list(data.heartbeat_gaps)
    lat = {name: histogram(v) for name, v in sorted(data.timings.items()) if v}
    if gaps:
        lat["heartbeat_interval"] = histogram(gaps)
    snap["latencies"] = lat
    active = [dict(f) for f in data.faults if f.get("Active")]
    snap["device"] = {
        "online": data.heartbeat_kind is not None,
        "lost": None,
        "heartbeats": len(gaps) + (1 if data.heartbeat_kind is not None else 0),
        "heartbeats_missed": None,
        "reboots": None,
        "faults": len(active),
        "faults_active": [],
        "malformed": len(data.payload_errors),
        "stale_replies": int(data.stale_replies),
        "transfer_errors": None,
        "retransmissions": None,
        "last_heartbeat": None,
    }
    snap["bus"] = {
        "frames_sent": None,
        "frames_received": None,
        "frames_in_capture": int(data.frames),
        "frames_lost": None,
        "bitrate": None,
        "bits": None,
        "load": None,
    }


__all__ = [
    "SCHEMA",
    "VERDICTS",
    "CampaignObserver",
    "LatencyTracker",
    "LiveFeed",
    "apply_record",
    "checks_of",
    "empty_snapshot",
    "histogram",
    "snapshot_from_directory",
]

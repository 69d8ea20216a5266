"""The state feed of the live view (``feltlab certify --live``, ``feltlab view --live``).

A :class:`LiveFeed` holds the latest snapshot of a campaign, a JSON-serialisable dict, and a
version number; the campaign thread publishes, the server thread (:mod:`feltlab.rig.live.server`)
reads, both under one lock.  A :class:`CampaignObserver` is what
:func:`feltlab.rig.certify.campaign.run_campaign` reports to (its ``live`` argument): the campaign's
options, the progress of each phase, the client and bus it collects with (device events from
the client's ``on_event``, the client's counters, the :class:`feltlab.rig.bus.transport.RigBus`
frame counters) and, from the frames on the node, the latencies so far (request to reply,
as the analysis pairs them from the capture).  At the end it publishes the record's verdict.

Interim figures are never a verdict: every snapshot before the end says so (``interim``),
and the verdict comes only from the record that
:func:`~feltlab.rig.certify.campaign.conclude` writes.

Snapshot shape (``SCHEMA`` 2; times in seconds, rates in frames or bits per second)::

    {"schema": 2, "version": int, "state": "starting"|"collecting"|"analysing"|"finished"
     |"interrupted"|"failed", "interim": bool, "phase": str,
     "campaign": {"id", "kind", "device", "profile", "seed" (a decimal string), "size",
                  "unit", "clock", "clock_description", "directory", "bus"},
     "progress": {"done", "total", "fraction", "wall_elapsed_s", "wall_left_s",
                  "clock_elapsed_s", "clock_left_s"},
     "device": {"online", "lost", "heartbeats", "heartbeats_missed", "reboots", "faults",
                "faults_active", "malformed", "stale_replies", "transfer_errors",
                "retransmissions", "last_heartbeat"},
     "bus": {"frames_sent", "frames_received", "frames_lost", "bitrate", "bits", "load",
             "load_average"},
     "latencies": {name: {"n", "p50", "p95", "p99", "max", "edges", "counts"}},
     "samples": {"collected", "missing", "missing_list"},
     "host_uncertainty": dict | None, "events": [{"t", "kind", "text"}],
     "verdict": str | None, "checks": [{"name", "value", "unit", "limits", "verdict"}],
     "errors": [str], "report": str | None}
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from feltlab.rig.certify.profile import profile_from_dict
from feltlab.rig.certify.record import clock_record, device_name
from feltlab.rig.live.state import (
    MAX_EVENTS,
    LatencyTracker,
    LiveFeed,
    apply_record,
    describe_event,
    empty_snapshot,
    fault_name,
    seed_text,
    unit_of,
)
from feltlab.strictjson import json_safe

log = logging.getLogger(__name__)


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
                "seed": seed_text(state.get("seed")),
                "size": state.get("size"),
                "unit": unit_of(kind),
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
        """Wrap a :class:`feltlab.rig.certify.campaign.Progress` so that this observer sees it."""
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
            "faults_active": [fault_name(c) for c in sorted(active)],
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
        # the part's average (its bits over its bus time: the figure a capture gives), beside
        # the last second's (it moves: 85.6%, 32.1%, 59.6% in one campaign)
        average = None
        if bitrate and self._c0 is not None and now_c > self._c0:
            average = min(1.0, bits / ((now_c - self._c0) * bitrate))
        if self._last_bus is None or now_c - self._last_bus[0] >= 1.0:
            self._last_bus = (now_c, bits)
        self._snap["bus"] = {
            "frames_sent": int(bus.frames_sent),
            "frames_received": int(bus.frames_received),
            "frames_lost": int(bus.frames_lost),
            "bitrate": bitrate,
            "bits": bits,
            "load": load,
            "load_average": average,
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
                snap = json_safe(self._snap)
            self.feed.publish(snap, final=final)
        except Exception:  # the live view must never stop a campaign
            log.warning("live view: snapshot failed", exc_info=True)


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


__all__ = ["CampaignObserver"]

"""The live view's snapshot and feed (:mod:`feltlab.rig.live.observer`): the snapshot's
constants and empty shape, the :class:`LiveFeed` that holds it, histograms, event texts, the latency
tracker and what a finished record adds to a snapshot."""

from __future__ import annotations

import copy
import logging
import math
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from feltlab.rig.certify.record import record_kind
from feltlab.rig.cli.render.text import rng_test_row, shown_verdict
from feltlab.rig.kinds import UnknownDeviceKind, get_kind
from feltlab.rig.protocol.codec import Channel, FaultCode, Opcode, Severity, State
from feltlab.strictjson import json_safe

log = logging.getLogger("feltlab.rig.live")

SCHEMA = 2
"""The snapshot's shape (docs/certification.md); 2: the campaign's seed is a decimal string."""
#: the verdict strings a record can carry (issue 13's per-check verdicts included)
VERDICTS = ("PASS", "FAIL", "ERROR", "INCONCLUSIVE", "ABORTED")
MAX_EVENTS = 200
MAX_SAMPLES = 200_000


def seed_text(seed: Any) -> str | None:
    """A campaign's seed as the snapshot carries it: a decimal string, exact, since a JSON
    number above 2**53 reaches the browser rounded (2256960695605605789 was shown as
    2,256,960,695,605,606,000, and a lab copying it could not rerun the campaign); None
    when the campaign has none yet."""
    return None if seed is None else str(seed)


def unit_of(kind: str) -> str:
    """What a sample of device ``kind`` is called (``shoes``; the registry's
    :attr:`~feltlab.rig.kinds.base.DeviceKind.unit`), ``samples`` for an unknown kind."""
    try:
        return get_kind(kind).unit
    except UnknownDeviceKind:
        return "samples"


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
            # strict JSON for every page (RFC 8259 has no NaN: a NaN was served as such)
            snap = json_safe(copy.deepcopy(dict(snapshot)))
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
        try:
            sev = Severity(int(detail.get("severity", -1))).name
        except ValueError:
            sev = str(detail.get("severity"))
        state = "raised" if detail.get("active") else "cleared"
        return (
            f"fault {fault_name(int(detail.get('code', -1)))} {state} (severity {sev}, "
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
    the battery's checks, then the measurements (the record's shape, rig/certify/campaign.py
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
    for t in (record.get("rng") or {}).get("tests", []) or []:
        rows.append(rng_test_row(t))
    for f in record.get("findings", []) or []:  # the security pack's (rig/security)
        evidence = [str(e) for e in f.get("evidence") or []]
        rows.append(
            {
                "name": f"security.{f.get('check')}",
                "value": evidence[0] if evidence else None,
                "unit": "",
                "limits": f.get("cwe"),
                "verdict": str(f.get("verdict")),
            }
        )
    # certify predict's record, or a shuffler campaign's predictability check (issue 40)
    pred = record if record.get("check") == "predictability" else record.get("predictability")
    if isinstance(pred, Mapping):
        rows.append(
            {
                "name": "predictability",
                "value": pred.get("summary"),
                "unit": "",
                "limits": "; ".join(pred.get("cwe") or []) or None,
                "verdict": str(pred.get("verdict")),
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
                "verdict": shown_verdict(m),
                "reason": reason,
            }
        )
    return rows


def power_of(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The battery's power table of a record as the live view shows it (None: no battery
    or no table): ``{"required", "level", "rows": [{"model", "shoes", "power", "low",
    "high", "caught", "needed", "by"}], "notes"}`` (the record's ``battery.power``,
    :class:`feltlab.rig.certify.power.PowerTable`)."""
    bat = record.get("battery") or {}
    power = bat.get("power")
    if not power:
        return None
    rows = [
        {
            "model": a.get("model"),
            "shoes": a.get("n_shoes"),
            "power": a.get("power"),
            "low": (a.get("ci95") or [None, None])[0],
            "high": (a.get("ci95") or [None, None])[1],
            "caught": bool(a.get("caught")),
            "needed": a.get("shoes_needed"),
            "by": a.get("caught_by"),
        }
        for a in power.get("alternatives", []) or []
    ]
    return {
        "required": power.get("required"),
        "level": power.get("level"),
        "rows": rows,
        "notes": [str(n) for n in bat.get("notes", []) or []],
    }


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
    snap["power"] = power_of(record)
    snap["errors"] = [str(e) for e in record.get("errors", []) or []]
    if record.get("host_uncertainty") is not None:
        snap["host_uncertainty"] = record["host_uncertainty"]
    coll = record.get("collection") or {}
    rng = record.get("rng") or {}
    if rng.get("sequences") is not None:  # a raw-output certificate: its sample is sequences
        coll = {"requested": rng["sequences"], "collected": rng["sequences"]}
        many = "" if rng["sequences"] == 1 else "s"
        snap.setdefault("campaign", {})["unit"] = f"sequence{many} of {rng.get('n_bits'):,} bits"
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
    camp.setdefault("kind", record_kind(record))
    camp["device"] = dev.get("name") or record.get("target") or camp.get("device")
    camp.setdefault("profile", dev.get("profile_name"))
    camp.setdefault("seed", seed_text(record.get("seed")))
    clock = record.get("clock") or {}
    if clock:
        camp["clock"] = clock.get("mode")
        camp["clock_description"] = clock.get("description")
    if directory is not None and (directory / "report.html").is_file():
        snap["report"] = "report/report.html"


def fault_name(code: int) -> str:
    """The protocol's name of fault ``code`` (``FaultCode``), or ``code N`` when unknown."""
    try:
        return FaultCode(code).name
    except ValueError:
        return f"code {code}"

"""The jackpot panel's own checks of :func:`feltlab.rig.kinds.jackpot.analyze.analyze_jackpot`:
failure detection, the prize distribution, the results' MACs and the rule 16.12 Madness 21
fallback; each records its measurements on the campaign's
:class:`feltlab.rig.certify.analyze.Analysis`.

Library code: it never prints.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feltlab.events import read_jsonl
from feltlab.rig.certify.decode import CaptureData, JackpotFrame
from feltlab.rig.certify.measures import (
    Measurement,
    prize_distribution_test,
    split_samples,
    within,
)
from feltlab.rig.protocol.codec import Codec
from feltlab.rig.protocol.secoc import DeviceKey, FreshnessVerifier, MacWindow, Verified

if TYPE_CHECKING:
    from feltlab.rig.certify.analyze import Analysis
    from feltlab.rig.certify.profile import Profile


def check_failure_detection(a: Analysis, data: CaptureData, lim: dict[str, float]) -> None:
    """Measure the panel's failure-detection time (s, max over samples) against ``lim``."""
    det = data.timings.get("failure_detection", [])
    split = split_samples(det)
    _, umax = a.uncertainty()
    a.measurements.append(
        within(
            "failure_detection.max",
            float(split.valid.max()) if split.valid.size else None,
            "s",
            None,
            lim.get("failure_detection_max"),
            uncertainty=umax,
            lengthened=True,
            n=int(split.valid.size),
            faults=[f["FaultCode"] for f in data.faults],
            **(
                {"bad_samples": split.bad, "reason": "negative or non-finite samples"}
                if split.bad
                else {}
            ),
        )
    )


def check_prizes(a: Analysis, data: CaptureData, prof: Profile, *, alpha: float) -> None:
    """Check the prizes drawn against the profile's ``prize_table`` at level ``alpha``."""
    table = prof.device.get("prize_table")
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


_Pending = tuple[JackpotFrame, int, set[int]]  # a result, the round armed when it came, its fvs


class _Session:
    """One device session's receiver state (a capture part), as the live client keeps it;
    its refusals go to ``refused`` and the prizes of its accepted results to ``prizes``."""

    def __init__(
        self,
        codec: Codec,
        verifier: FreshnessVerifier,
        require_auth: bool,
        prizes: list[int],
        refused: list[dict[str, Any]],
    ) -> None:
        self.window: MacWindow[_Pending] = MacWindow(verifier)
        self.codec = codec
        self.require_auth = require_auth
        self.prizes, self.refused = prizes, refused
        self.round_id = -1
        self.round_fvs: set[int] = set()
        self.asked: Counter[int] = Counter()
        self.status_rid: int | None = None
        # (round armed, box, round tag) -> the first result of it whose MAC never came, and
        # the same keys of the results accepted: a result asked for again and recovered is
        # no fault
        self.bare: dict[tuple[int, int, int], JackpotFrame] = {}
        self.got: set[tuple[int, int, int]] = set()

    def refuse(self, f: JackpotFrame, reason: str) -> None:
        s = f.signals
        self.refused.append(
            {
                "part": f.part,
                "time": f.time,
                "draw_counter": s["DrawCounter"],
                "box": s["Box"],
                "reason": reason,
            }
        )

    def lost(self, items: Sequence[_Pending]) -> None:
        for f, round_id, _ in items:
            if f.signals["RoundTag"] == round_id & 0xFF:  # the client asks for its round's only
                self.bare.setdefault((round_id, f.signals["Box"], f.signals["RoundTag"]), f)

    def settle(self) -> None:
        """The round ends: each box whose results all came without a MAC is refused once,
        as the client's ``result`` does when no attempt brought an authenticated one."""
        if self.require_auth:
            for k, f in self.bare.items():
                if k not in self.got:
                    self.refuse(f, "unauthenticated")
        self.bare, self.got = {}, set()

    def end(self) -> None:
        self.lost(self.window.drain())
        self.settle()

    def feed(self, fr: JackpotFrame) -> None:
        s = fr.signals
        if fr.what == "arm":
            if s["Value"] != self.round_id:  # a new round: forget the last one's results
                self.settle()
                self.round_id, self.round_fvs = int(s["Value"]), set()
        elif fr.what == "status":
            if s["RequestId"] != self.status_rid:
                self.status_rid = s["RequestId"]
                self.lost(self.window.drain())
                self.asked.update(self.round_fvs)
        elif fr.what == "result":
            payload = bytes(self.codec.encode("JackpotResult", s).data)
            came = (fr, self.round_id, self.round_fvs)
            pushed = self.window.add(came, payload, s["DrawCounter"])
            if pushed is not None:
                self.lost([pushed])
        elif fr.what == "mac":
            self.mac(int(s["Mac"]).to_bytes(8, "little"))

    def mac(self, mac: bytes) -> None:
        match = self.window.match(mac)
        if match is None:
            return  # a MAC without a result
        self.lost(match.lost)
        (res, round_id, round_fvs), verdict = match.result, match.outcome
        sig = res.signals
        if not isinstance(verdict, Verified):
            self.refuse(res, verdict.reason)
        elif verdict.fresh and round_id >= 0 and sig["RoundTag"] != round_id & 0xFF:
            self.refuse(res, "replayed")  # authentic, but of another round
        elif verdict.fresh:
            round_fvs.add(verdict.freshness)
            self.got.add((round_id, sig["Box"], sig["RoundTag"]))
            self.prizes.append(sig["PrizeCents"])
        elif self.asked[verdict.freshness] > 0:
            self.asked[verdict.freshness] -= 1  # a repeat asked for by a STATUS
        elif verdict.freshness not in round_fvs:
            self.refuse(res, "replayed")  # a result of an earlier round, sent again
        # else: the panel repeated a result of this round (a retried PRESS)


def verify_results(
    frames: Sequence[JackpotFrame],
    key: DeviceKey,
    base: int,
    *,
    require_auth: bool,
    starts: Mapping[int, int] | None = None,
) -> tuple[list[int], list[dict[str, Any]]]:
    """Judge a capture's jackpot results offline exactly as the live
    :class:`feltlab.rig.clients.JackpotPanelClient` does, frame by frame in capture order
    (``frames``: :attr:`feltlab.rig.certify.decode.CaptureData.jackpot` of the panel at
    ``base``, whose key is ``key``).

    Results and MACs are paired through the client's
    :class:`feltlab.rig.protocol.secoc.MacWindow` (a later result can overtake a queued MAC:
    result, result, MAC, MAC), under a :class:`FreshnessVerifier` per part (a part is a new
    device session, starting from ``starts[part]``, the freshness value the lab had accepted
    before it; default 0).  A result is judged by the round armed when it came; a STATUS
    command (once per request id: its retransmissions are one request) gives up the pending
    results' MACs as lost (the client sends it after an attempt timed out, when it drains its
    window) and asks the panel to repeat the round's accepted results: each such repeat is
    accepted whenever it comes, even after the next round is armed; any other repeat of an
    accepted result of an earlier round is a replay.  A result whose MAC never came is
    refused as unauthenticated (when ``require_auth``) only if no result of its box and round
    was accepted before the round ended (the next round armed, or the part's end): once per
    box and round, as the client refuses a :meth:`result` that no attempt answered with an
    authenticated result.

    Returns ``(prizes, refused)``: the prizes (cents) of the accepted results, in order, and
    one row per refused result (``part``, ``time`` s, ``draw_counter``, ``box``, ``reason``:
    forged, replayed, reordered, or unauthenticated, a result whose MAC never came when
    ``require_auth``).
    """
    codec = Codec(base)
    data_id = codec.id_of("JackpotResult")
    prizes: list[int] = []
    refused: list[dict[str, Any]] = []
    ses: _Session | None = None
    part_now = 0
    for fr in frames:
        if ses is None or fr.part != part_now:
            if ses is not None:
                ses.end()
            part_now = fr.part
            verifier = FreshnessVerifier(key, data_id, (starts or {}).get(fr.part, 0))
            ses = _Session(codec, verifier, require_auth, prizes, refused)
        ses.feed(fr)
    if ses is not None:
        ses.end()
    return prizes, refused


def authenticate(
    a: Analysis,
    data: CaptureData,
    prof: Profile,
    key: DeviceKey,
    starts: dict[int, int] | None = None,
) -> None:
    """Verify every captured jackpot result's MAC as the client does
    (:func:`verify_results`): the prizes drawn are the accepted results only; each refused
    one (forged, replayed from this or an earlier session, reordered, or without a MAC when
    the profile requires authentication) is a security fault of the record."""
    prizes, refused = verify_results(
        data.jackpot, key, prof.base, require_auth=prof.authenticate, starts=starts
    )
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


def check_madness21(a: Analysis, directory: Path | None) -> None:
    """Check the madness21 fallback payouts logged in ``directory`` (none: no log)."""

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

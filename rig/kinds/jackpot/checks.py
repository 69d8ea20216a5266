"""The jackpot panel's own checks of :func:`feltlab.rig.kinds.jackpot.analyze.analyze_jackpot`:
failure detection, the prize distribution, the results' MACs and the rule 16.12 Madness 21
fallback; each records its measurements on the campaign's
:class:`feltlab.rig.certify.analyze.Analysis`.

Library code: it never prints.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feltlab.events import read_jsonl
from feltlab.rig.certify.decode import CaptureData
from feltlab.rig.certify.measures import (
    Measurement,
    prize_distribution_test,
    split_samples,
    within,
)
from feltlab.rig.errors import SecurityFault
from feltlab.rig.protocol.codec import Codec
from feltlab.rig.protocol.secoc import DeviceKey, FreshnessVerifier

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


def authenticate(
    a: Analysis,
    data: CaptureData,
    prof: Profile,
    key: DeviceKey,
    starts: dict[int, int] | None = None,
) -> None:
    """Verify every captured jackpot result's MAC as the client does (per part: a part is
    a new device session, which starts from the freshness value the lab had accepted before
    it, ``starts[part]``): the prizes drawn are the accepted results only; each refused one
    (forged, replayed from this or an earlier session, reordered, or without a MAC when the
    profile requires authentication) is a security fault of the record."""
    codec = Codec(prof.base)
    data_id = codec.id_of("JackpotResult")
    prizes: list[int] = []
    refused: list[dict[str, Any]] = []
    verifier: FreshnessVerifier | None = None
    part_now = 0
    accepted_round: dict[int, int | None] = {}  # freshness -> the round armed at acceptance
    for part, t, sig, mac in data.results:
        if part != part_now:
            start = (starts or {}).get(part, 0)
            part_now, accepted_round = part, {}
            verifier = FreshnessVerifier(key, data_id, start)
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
        armed = [r for p, ta, r in data.arms if p == part and ta <= t]
        if v.fresh and armed and sig["RoundTag"] != armed[-1] & 0xFF:
            refused.append({**row, "reason": "replayed"})  # authentic, of another round
            continue
        now = armed[-1] if armed else None  # the round armed when it came
        if v.fresh:
            accepted_round[v.freshness] = now
            prizes.append(sig["PrizeCents"])
        elif v.freshness not in accepted_round or accepted_round[v.freshness] != now:
            # a repeat is the panel's only within the round that accepted it (STATUS, a
            # retried PRESS); after a new round is armed it is a replay, as the client says
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

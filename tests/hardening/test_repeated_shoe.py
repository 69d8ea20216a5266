"""Issue 14, item 5: content, not numbers.  A shoe number sent again with other content (here a
duplicated card) is compared with the first copy and is a FAIL, not "a repeated read"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from feltlab.rig import devices
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import quick_profile
from feltlab.rig.kinds import DeviceKind
from feltlab.rig.protocol.codec import Channel, Opcode, Result


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


class TwoFacedShuffler(devices.BatchShuffler):
    """Sends each shoe twice under one shoe number: the second copy of shoe 5 has its
    first card duplicated over the second."""

    def _execute_kind(self, rid: int, op: int, a8: int, a32: int) -> bool:
        if op == Opcode.READ_SHOE and self.shoe is not None and self.state.name == "READY":
            good = replace(self.shoe, request_id=rid)
            self._ack(rid, op, Result.OK, len(good.encode()))
            self._send_payload(Channel.SHOE, good.encode())
            copy = good
            if good.shoe_number == 5:
                codes, decks = good.codes.copy(), good.card_decks.copy()
                codes[1], decks[1] = codes[0], decks[0]
                copy = replace(good, codes=codes, card_decks=decks)
            self._send_payload(Channel.SHOE, copy.encode())
            return True
        return super()._execute_kind(rid, op, a8, a32)


def test_a_shoe_resent_with_other_content_fails(
    tmp_path: Path, replace_kind: Callable[..., DeviceKind]
) -> None:
    replace_kind("batch", simulator=TwoFacedShuffler)
    prof = quick_profile("batch", null_replicates=39)
    res = run_campaign(CampaignOptions(prof, tmp_path / "c", size=12, seed=3))
    assert res.verdict is Verdict.FAIL
    m = next(
        m for m in res.record["measurements"] if m["name"] == "integrity.repeated_shoes_differing"
    )
    assert m["value"] == 1.0 and m["verdict"] == "FAIL"
    assert m["detail"]["examples"] == [
        "capture-001.blf: shoe 5 was sent again with other content (positions differing: 1)"
    ]
    # the 11 honest repeats are the same shoe card for card: no finding; offline agrees
    offline = analyze_path(tmp_path / "c", None, out=None)
    assert offline.verdict is Verdict.FAIL

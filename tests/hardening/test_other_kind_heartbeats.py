"""Issue 41 (low): heartbeats of another kind on the device's id are named.

A second node transmitting Heartbeat frames on a device's id (ISO 11898-1 gives an identifier
to one node) announcing another ``Kind``: before the fix the client took them for the device's
own (so a silent device stayed "online", and their BootCount and Counter read as reboots and
gaps) and the record never named them.  Now they are counted, in the record's
``heartbeat.other_kind`` measurement (FAIL above 0, with each Kind's count) and live, and
the device's heartbeat period is timed from its own heartbeats only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import quick_profile
from feltlab.rig.clients import BatchShufflerClient
from feltlab.rig.devices import BatchShuffler
from feltlab.rig.protocol.codec import Codec, Kind


class Interloper(BatchShuffler):
    """A batch shuffler beside which a second node sends, after every 4th heartbeat, a
    jackpot panel's heartbeat on the same id (its own counter, boot count 9)."""

    def _heartbeat(self) -> None:
        super()._heartbeat()
        if self.counter % 4 == 0 and self.state.name != "BOOT":
            self._send(
                "Heartbeat",
                {
                    "Counter": self.counter // 4,
                    "State": 0,
                    "Kind": int(Kind.JACKPOT_PANEL),
                    "ProtocolMajor": self.protocol_major,
                    "ProtocolMinor": self.protocol_minor,
                    "PeriodMs": 400,
                    "ActiveFault": 0,
                    "BootCount": 9,
                },
            )


def _measure(record: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in record["measurements"] if m["name"] == name)


def test_heartbeats_of_another_kind_are_counted_and_fail(tmp_path: Path) -> None:
    prof = quick_profile("batch")
    live = run_campaign(CampaignOptions(prof, tmp_path / "c", size=4, seed=3, simulator=Interloper))
    other = _measure(live.record, "heartbeat.other_kind")
    assert other["verdict"] == "FAIL" and other["value"] > 0
    assert other["detail"]["kinds"] == {"JACKPOT_PANEL": int(other["value"])}
    assert other["detail"]["device_kind"] == int(Kind.BATCH_SHUFFLER)
    period = _measure(live.record, "heartbeat.period")  # the device's own, 0.1 s
    assert period["verdict"] == "PASS" and abs(period["value"] - 0.1) < 0.005
    assert live.verdict is Verdict.FAIL
    offline = analyze_path(tmp_path / "c", None, out=None)
    assert _measure(offline.record, "heartbeat.other_kind") == other


def test_a_device_alone_on_its_id_passes_with_zero(tmp_path: Path) -> None:
    live = run_campaign(CampaignOptions(quick_profile("batch"), tmp_path / "c", size=4, seed=3))
    other = _measure(live.record, "heartbeat.other_kind")
    assert (other["value"], other["verdict"]) == (0.0, "PASS")
    assert "kinds" not in other["detail"]


def _heartbeat(codec: Codec, counter: int, kind: Kind, boot: int) -> Any:
    return codec.encode(
        "Heartbeat",
        {
            "Counter": counter,
            "State": 0,
            "Kind": int(kind),
            "ProtocolMajor": 2,
            "ProtocolMinor": 2,
            "PeriodMs": 100,
            "ActiveFault": 0,
            "BootCount": boot,
        },
    )


def test_the_client_never_takes_another_kinds_heartbeat_for_the_devices(vbus: str) -> None:
    """Live: the other node's heartbeat (BootCount 9, its own counter) between two of the
    device's is neither a reboot nor a counter gap, and does not count as the device's."""
    client = BatchShufflerClient(vbus)
    codec = Codec(client.base)
    try:
        for msg in (
            _heartbeat(codec, 0, Kind.BATCH_SHUFFLER, 0),
            _heartbeat(codec, 77, Kind.JACKPOT_PANEL, 9),
            _heartbeat(codec, 1, Kind.BATCH_SHUFFLER, 0),
        ):
            client.on_message(msg)
        assert [e.kind for e in client.events] == ["online"]
        assert client.other_kind_heartbeats == 1 and client.heartbeats_missed == 0
        assert client.heartbeat is not None and client.heartbeat.signals["Counter"] == 1
    finally:
        client.close()

"""The device-kind registry (feltlab.rig.kinds, docs/design.md "How to add a device kind"): the
built-in kinds come from it, and a toy kind registered here -- a dice roller with its own
simulator, client, collection and analysis -- runs a whole simulated-time campaign through
the entry point ``feltlab certify`` uses (run_campaign), then leaves the registry as it was."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner

from feltlab.cli import main as feltlab_main
from feltlab.rig import kinds
from feltlab.rig.certify import campaign as certify
from feltlab.rig.certify.analyze import Analysis
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.collect import CampaignOptions, Collected
from feltlab.rig.certify.decode import CaptureData
from feltlab.rig.certify.faults import FaultRunner
from feltlab.rig.certify.measures import Measurement
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import Profile, Progress, load_profile
from feltlab.rig.certify.uncertainty import HostUncertainty
from feltlab.rig.clients.base import DeviceClient
from feltlab.rig.devices import make_device
from feltlab.rig.devices.base import SimDevice
from feltlab.rig.errors import RigError
from feltlab.rig.kinds.base import DeviceKind
from feltlab.rig.protocol.codec import Channel, Frame, Kind, Opcode

FACES = 6
DICE_KIND = cast(Kind, 4)  # the Heartbeat's Kind of the toy (4 bits; 1-3 are the built-ins)


class DiceRoller(SimDevice):
    """A simulated die: DEAL rolls it (ChaCha20, face 0..5) and answers with a Card frame
    whose Code is the face; ``loaded`` makes face 5 come up on every other roll."""

    kind = DICE_KIND
    kind_name = "dice"
    tx_channels = (Channel.AUDIT,)

    def __init__(self, bus: Any, *, loaded: bool = False, **kw: Any) -> None:
        self.loaded = loaded
        self.rolls = 0
        super().__init__(bus, **kw)

    def _status(self, rid: int = 0) -> None:
        self._send(
            "Status",
            {
                "State": int(self.state),
                "Kind": int(self.kind),
                "ShoeCount": self.rolls & 0xFFFF,
                "CutPosition": 0,
                "Cards": 0,
                "Decks": 0,
                "RequestId": rid,
            },
        )

    def _execute_kind(self, rid: int, op: int, a8: int, a32: int) -> bool:
        if op != Opcode.DEAL:
            return False
        self.rolls += 1
        face = int(self.rng.integers(FACES)[0])
        if self.loaded and self.rolls % 2:
            face = FACES - 1
        signals = {"RequestId": rid, "Code": face, "Deck": 0, "Sequence": self.rolls & 0xFFFF}
        self._send("Card", dict(signals, Remaining=0, Slot=0))
        return True


class DiceClient(DeviceClient):
    """The host's side of the die: :meth:`roll` sends DEAL and returns the face."""

    kind = DICE_KIND
    kind_name = "dice"

    def _setup(self) -> None:
        self._faces: dict[int, Frame] = {}
        self._handlers["Card"] = lambda f: self._faces.__setitem__(f.signals["RequestId"], f)

    def roll(self) -> int:
        f = self.request(Opcode.DEAL, reply=lambda rid: self._faces.get(rid))
        return int(f.signals["Code"])


def collect_rolls(
    opts: CampaignOptions,
    client: Any,
    want: int,
    result: Collected,
    progress: Progress,
    stop: threading.Event,
    *,
    faults: FaultRunner | None,
    directory: Path,
    part: int,
) -> None:
    progress.start("rolling the die", want)
    for _ in range(want):
        if stop.is_set():
            break
        client.roll()
        result.done += 1
        progress.advance()


def faces_in(data: CaptureData) -> list[int]:
    return [int(e[1]) for e in data.card_events if e[0] == "deal"]


def analyze_rolls(
    data: CaptureData,
    prof: Profile,
    *,
    alpha: float,
    seed: int,
    directory: Path | None,
    progress: Progress,
    host: HostUncertainty | None,
) -> Analysis:
    """Pearson's chi-square of the faces in the capture against a fair die (5 degrees of
    freedom), FAIL below ``alpha``."""
    from scipy import stats

    faces = faces_in(data)
    counts = [faces.count(f) for f in range(FACES)]
    expected = Fraction(len(faces), FACES)
    chi2 = sum((Fraction(c) - expected) ** 2 / expected for c in counts)
    p = float(stats.chi2.sf(float(chi2), FACES - 1))
    verdict = Verdict.PASS if p >= alpha else Verdict.FAIL
    detail = {"counts": counts, "chi2": float(chi2)}
    return Analysis(
        measurements=[Measurement("dice.uniformity", p, "p", alpha, None, verdict, detail)]
    )


class DiceKind(DeviceKind):
    """The toy kind: one subclass of the base, its methods the toy's collection and analysis."""

    name = "dice"
    label = "toy dice roller"
    simulator = DiceRoller
    client = DiceClient
    base = 0x500
    profile = ""  # set per test: the toy's profile is written to tmp_path
    unit = "rolls"
    command = "shuffler"
    device_keys = frozenset({"loaded"})

    def collect(
        self,
        opts: Any,
        client: Any,
        want: int,
        result: Any,
        progress: Any,
        stop: Any,
        *,
        faults: Any,
        directory: Path,
        part: int,
    ) -> None:
        collect_rolls(
            opts,
            client,
            want,
            result,
            progress,
            stop,
            faults=faults,
            directory=directory,
            part=part,
        )

    def analyze(
        self,
        data: Any,
        prof: Any,
        *,
        alpha: float,
        seed: int,
        directory: Path | None,
        progress: Any,
        host: Any,
    ) -> Analysis:
        return analyze_rolls(
            data, prof, alpha=alpha, seed=seed, directory=directory, progress=progress, host=host
        )

    def count(self, data: Any) -> int:
        return len(faces_in(data))


@pytest.fixture
def dice(tmp_path: Path) -> Iterator[DeviceKind]:
    toml = tmp_path / "dice.toml"
    toml.write_text(
        '[device]\nkind = "dice"\nname = "toy die"\nheartbeat_period = 0.1\n\n'
        "[campaign]\nrolls = 600\nalpha = 0.01\n"
    )
    kind = kinds.register_kind(DiceKind(profile=toml))
    try:
        yield kind
    finally:
        kinds.unregister_kind("dice")
    assert "dice" not in kinds.names()


def test_builtin_kinds_come_from_the_registry() -> None:
    assert kinds.names() == ("batch", "continuous", "jackpot")
    batch, continuous, jackpot = kinds.kinds()
    assert (batch.base, continuous.base, jackpot.base) == (0x100, 0x200, 0x300)
    assert (batch.unit, continuous.unit, jackpot.unit) == ("shoes", "deals", "draws")
    assert (batch.profile, jackpot.command, jackpot.keyed) == ("batch6", "jackpot-panel", True)
    assert continuous.simulator.__name__ == "ContinuousShuffler"
    assert kinds.by_heartbeat(3) is jackpot and kinds.by_heartbeat(9) is None
    with pytest.raises(kinds.UnknownDeviceKind, match="choose one of batch, continuous, jackpot"):
        kinds.get_kind("dice")
    with pytest.raises(RigError, match="registered already"):
        kinds.register_kind(batch)
    with pytest.raises(RigError, match="default base of 'batch'"):
        kinds.register_kind(DiceKind(base=0x100))
    with pytest.raises(RigError, match="takes a DeviceKind instance"):
        kinds.register_kind(DiceKind)  # type: ignore[arg-type]


def test_a_kind_is_checked_when_it_is_made() -> None:
    """The base class refuses a kind without its body, a bad word or unit, and a setting it
    does not have; ``with_settings`` copies a kind with one setting changed."""

    class Bodiless(DeviceKind):
        name, label, unit, command = "bodiless", "no body", "things", "bodiless"

    with pytest.raises(TypeError, match="abstract"):
        Bodiless()  # type: ignore[abstract]
    with pytest.raises(RigError, match="unit 'seed' is a certify option's name"):
        DiceKind(unit="seed")
    with pytest.raises(RigError, match="command must be a word, got 'two words'"):
        DiceKind(command="two words")
    with pytest.raises(RigError, match="simulator must be a class"):
        DiceKind(simulator="DiceRoller")
    with pytest.raises(RigError, match="no setting 'collect'"):
        DiceKind(collect=None)
    toy = DiceKind(profile="a.toml").with_settings(base=0x510)
    assert (type(toy), toy.profile, toy.base, DiceKind.base) == (DiceKind, "a.toml", 0x510, 0x500)


def test_a_toy_kind_runs_a_simulated_campaign(dice: DeviceKind, tmp_path: Path) -> None:
    assert kinds.names()[-1] == "dice" and kinds.get_kind("dice") is dice
    prof = load_profile(None, "dice")
    assert prof.kind == "dice" and prof.base == 0x500
    opts = CampaignOptions(prof, tmp_path / "fair", seed=12)
    res = certify.run_campaign(opts)
    rec = res.record
    assert res.verdict == Verdict.PASS and rec["verdict"] == "PASS"
    assert rec["kind"] == "dice" and rec["device"]["label"] == "toy dice roller"
    assert rec["device"]["base"] == "0x500" and rec["clock"]["mode"] == "sim"
    col = rec["collection"]
    assert (col["requested"], col["collected"], col["missing_count"]) == (600, 600, 0)
    meas = {m["name"]: m for m in rec["measurements"]}
    assert meas["collection.rolls_missing"]["value"] == 0.0
    uni = meas["dice.uniformity"]
    assert sum(uni["detail"]["counts"]) == 600 and uni["verdict"] == "PASS"
    assert uni["value"] >= 0.01
    html = (tmp_path / "fair" / "report.html").read_text()
    assert "toy dice roller" in html and "dice.uniformity" in html
    assert json.loads((tmp_path / "fair" / "record.json").read_text())["verdict"] == "PASS"
    # the same seed gives the same faces: the campaign is a pure function of its seed
    again = certify.run_campaign(CampaignOptions(prof, tmp_path / "again", seed=12))
    assert again.record["measurements"] == rec["measurements"]
    # offline analysis of the capture reaches the same verdict through the registry
    offline = analyze_path(tmp_path / "fair", None, out=None)
    assert offline.verdict == Verdict.PASS and offline.record["collection"]["collected"] == 600


def test_a_loaded_toy_die_fails(dice: DeviceKind, tmp_path: Path) -> None:
    prof = load_profile(None, "dice")
    loaded = replace(prof, device=dict(prof.device, loaded=True))
    res = certify.run_campaign(CampaignOptions(loaded, tmp_path / "loaded", size=300, seed=3))
    meas = {m["name"]: m for m in res.record["measurements"]}
    counts = meas["dice.uniformity"]["detail"]["counts"]
    assert res.verdict == Verdict.FAIL and meas["dice.uniformity"]["verdict"] == "FAIL"
    assert counts[FACES - 1] >= 150 and sum(counts) == 300  # every other roll is a six


def test_a_toy_kind_is_a_choice_of_device_run(dice: DeviceKind) -> None:
    dev = make_device("dice", "interface=virtual,channel=dice-choice", {"loaded": True})
    assert isinstance(dev, DiceRoller) and dev.loaded and dev.base == 0x500
    with pytest.raises(RigError, match="unknown profile key"):
        make_device("dice", "interface=virtual,channel=dice-choice", {"decks": 6})
    r = CliRunner().invoke(feltlab_main, ["device", "run", "--help"])
    assert r.exit_code == 0 and "dice" in r.output and "batch" in r.output

"""Property tests on every decoder: arbitrary bytes give a clear error (a feltlab exception or
a ValueError naming the problem), never another exception, never a hang; and garbage frames
never kill a client's receive thread."""

from __future__ import annotations

import contextlib
import logging
import signal
import struct
import threading
import time
import tomllib
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import can
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pytest import LogCaptureFixture

from feltlab.errors import FeltlabError
from feltlab.events import Event, read_jsonl
from feltlab.rig.bus.capture import CaptureDecoder, decode_capture
from feltlab.rig.clients import BatchShufflerClient, JackpotPanelClient
from feltlab.rig.devices import BatchShuffler, JackpotPanel, Timing, make_device
from feltlab.rig.errors import ProtocolError
from feltlab.rig.protocol.codec import (
    EXT_SHIFT,
    PAYLOAD_CLASSES,
    PROTOCOL_MAJOR,
    Codec,
    Frame,
    IsoTpReassembler,
    PayloadType,
)
from feltlab.tournament import load_definition

#: every example must finish within this many seconds (a hang fails, it does not block CI).
HANG = 5.0
CLEAR = (FeltlabError, ValueError)
PROPS = settings(
    max_examples=150,
    deadline=2000,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@contextlib.contextmanager
def no_hang(seconds: float = HANG) -> Iterator[None]:
    """Fail (TimeoutError) instead of hanging when the body runs longer than ``seconds``."""

    def alarm(*_: object) -> None:
        raise TimeoutError(f"decoder ran longer than {seconds} s: a hang")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def clear_error(exc: BaseException) -> None:
    assert isinstance(exc, CLEAR), f"{type(exc).__name__}: {exc}"
    assert str(exc), "the error must name the problem"


# ------------------------------------------------------------------ single-frame messages

BASES = st.sampled_from([0x010, 0x100, 0x300, 0x7F0])


@PROPS
@given(base=BASES, off=st.integers(0, 15), ext=st.booleans(), data=st.binary(max_size=8))
def test_dbc_decode_of_any_frame(base: int, off: int, ext: bool, data: bytes) -> None:
    codec = Codec(base)
    arb = ((base + off) << EXT_SHIFT | 0x05EC) if ext else base + off
    msg = can.Message(arbitration_id=arb, data=data, is_extended_id=ext)
    with no_hang():
        try:
            frame = codec.decode(msg)
        except ProtocolError as exc:
            clear_error(exc)
            return
    assert frame is None or isinstance(frame, Frame)
    m = codec.db.get_message_by_name(frame.name) if frame is not None else None
    if m is not None and len(data) == 8 and sum(s.length for s in m.signals) == 64:
        # a frame whose signals fill all 64 bits re-encodes to itself
        assert frame is not None
        assert bytes(codec.encode(frame.name, frame.signals).data) == data


@PROPS
@given(base=BASES, arb=st.integers(0, (1 << 29) - 1), data=st.binary(max_size=8))
def test_dbc_decode_of_any_extended_id(base: int, arb: int, data: bytes) -> None:
    msg = can.Message(arbitration_id=arb, data=data, is_extended_id=True)
    try:
        Codec(base).decode(msg)
    except ProtocolError as exc:
        clear_error(exc)


# ------------------------------------------------------------------ ISO-TP payloads


def sealed(body: bytes) -> bytes:
    return body + struct.pack("<I", zlib.crc32(body))


@st.composite
def payloads(draw: st.DrawFn) -> bytes:
    """Arbitrary bytes, or (to get past the CRC) a valid header + arbitrary body, sealed."""
    raw = draw(st.binary(max_size=700))
    how = draw(st.sampled_from(["raw", "sealed", "typed"]))
    if how == "raw":
        return raw
    if how == "sealed":
        return sealed(raw)
    ptype = draw(st.sampled_from(list(PayloadType)))
    return sealed(bytes([PROTOCOL_MAJOR, ptype]) + raw)


@PROPS
@given(data=payloads(), channel=st.sampled_from(list(PAYLOAD_CLASSES)))
def test_isotp_payload_decode(data: bytes, channel: Any) -> None:
    with no_hang():
        try:
            PAYLOAD_CLASSES[channel].decode(data)
        except ProtocolError as exc:
            clear_error(exc)


@PROPS
@given(frames=st.lists(st.binary(max_size=8), max_size=40))
def test_isotp_reassembler_never_raises(frames: list[bytes]) -> None:
    re = IsoTpReassembler()
    with no_hang():
        for f in frames:
            out = re.feed(f)
            assert out is None or isinstance(out, bytes)


# ------------------------------------------------------------------ capture files


@PROPS
@given(data=st.binary(max_size=2000), suffix=st.sampled_from([".blf", ".asc", ".log"]))
def test_capture_file_of_arbitrary_bytes(tmp_path: Path, data: bytes, suffix: str) -> None:
    path = tmp_path / f"cap{suffix}"
    path.write_bytes(data)
    with no_hang():
        try:
            for rec in decode_capture(path):
                assert rec.kind in ("frame", "payload")
        except Exception as exc:
            clear_error(exc)


@PROPS
@given(
    lines=st.lists(
        st.tuples(
            st.integers(0, 0x7FF),
            st.binary(max_size=8),
            st.sampled_from(["", "x"]),
        ),
        max_size=20,
    )
)
def test_candump_log_of_arbitrary_frames(
    tmp_path: Path, lines: list[tuple[int, bytes, str]]
) -> None:
    """Well-formed candump lines with arbitrary ids and data go through every decoder."""
    text = "".join(
        f"(1700000000.{i:06d}) can0 {arb:03X}#{data.hex().upper()}{junk}\n"
        for i, (arb, data, junk) in enumerate(lines)
    )
    path = tmp_path / "cap.log"
    path.write_text(text)
    dec = CaptureDecoder()
    with no_hang():
        try:
            for rec in decode_capture(path):
                assert rec.kind in ("frame", "payload")
        except Exception as exc:
            clear_error(exc)
    del dec


# ------------------------------------------------------------------ device profiles (TOML)

TOML_VALUES = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True),
    st.booleans(),
    st.text(max_size=10),
    st.lists(st.integers(-5, 10**10), max_size=3),
    st.lists(st.lists(st.integers(-5, 10**10), max_size=3), max_size=3),
)
PROFILE_KEYS = st.sampled_from(
    [
        "base",
        "seed",
        "decks",
        "model",
        "slots",
        "bitrate",
        "prize_table",
        "heartbeat_period",
        "shuffle_duration",
        "button_latency",
        "reports_decks",
        "penetration",
        "key",
        "key_id",
        "key_file",
        "other",
    ]
)


@PROPS
@given(
    kind=st.sampled_from(["batch", "continuous", "jackpot"]),
    profile=st.dictionaries(PROFILE_KEYS, TOML_VALUES, max_size=4),
)
def test_make_device_from_arbitrary_profile(kind: str, profile: dict[str, Any]) -> None:
    with no_hang():
        try:
            make_device(kind, "interface=virtual,channel=unused", profile)
        except Exception as exc:
            clear_error(exc)


@PROPS
@given(data=st.binary(max_size=400))
def test_device_profile_of_arbitrary_bytes(tmp_path: Path, data: bytes) -> None:
    """The profile file's parse step (TOML) and then the device: clear errors only."""
    path = tmp_path / "profile.toml"
    path.write_bytes(data)
    with no_hang():
        try:
            parsed = tomllib.loads(path.read_bytes().decode("utf-8"))
            dev = parsed.get("device", {})
            make_device("jackpot", "interface=virtual,channel=unused", dev)
        except Exception as exc:
            clear_error(exc)


# ------------------------------------------------------------------ tournament files


@PROPS
@given(data=st.one_of(st.binary(max_size=400), st.text(max_size=400).map(str.encode)))
def test_tournament_file_of_arbitrary_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "t.toml"
    path.write_bytes(data)
    with no_hang():
        try:
            load_definition(path)
        except Exception as exc:
            clear_error(exc)
            assert isinstance(exc, FeltlabError), "a file that is not a definition names the file"


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tournament.toml"


@PROPS
@given(
    section=st.sampled_from(["tournament", "chips", "wagers", "timing", "prizes", "stages", "x"]),
    key=st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=20),
    value=TOML_VALUES,
    drop=st.booleans(),
)
def test_tournament_definition_with_arbitrary_field(
    tmp_path: Path, section: str, key: str, value: Any, drop: bool
) -> None:
    """The example definition with one field set to an arbitrary value (or a table dropped)."""
    from feltlab.tournament import TournamentDefinition

    assert EXAMPLE.exists(), "examples/tournament.toml ships with the repository"
    data = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    if drop:
        data.pop(section, None)
    elif isinstance(data.get(section), dict):
        data[section][key] = value
    else:
        data[section] = value
    with no_hang():
        try:
            TournamentDefinition.from_dict(data)
        except Exception as exc:
            clear_error(exc)


# ------------------------------------------------------------------ event logs


@PROPS
@given(
    text=st.one_of(
        st.text(max_size=300),
        st.binary(max_size=300).map(lambda b: b.decode("utf-8", "replace")),
        st.sampled_from(
            [
                '{"seq": Infinity, "round": 0, "kind": "round_started", "data": {}}',
                '{"seq": 1e999, "round": 0, "kind": "round_started", "data": {}}',
                "[" * 100_000,
                '{"seq": 0, "round": 0, "kind": "round_started", "data": [[1, 2, 3]]}',
                '{"seq": "0", "round": null, "kind": 3, "data": {}}',
                "[]",
                '"x"',
            ]
        ),
    )
)
def test_event_log_of_arbitrary_text(text: str) -> None:
    with no_hang():
        try:
            events = read_jsonl(text)
        except Exception as exc:
            clear_error(exc)
            return
    assert all(isinstance(e, Event) for e in events)


# ------------------------------------------------------------------ threaded decoders

FAST = Timing(heartbeat_period=0.2)  # slow enough that a loaded machine never misses three


@pytest.mark.parametrize(
    "client_cls,device_cls",
    [(BatchShufflerClient, BatchShuffler), (JackpotPanelClient, JackpotPanel)],
)
def test_garbage_frames_never_kill_the_receive_thread(
    vbus: str, caplog: LogCaptureFixture, client_cls: type[Any], device_cls: type[Any]
) -> None:
    """Garbage at every id of the device's range (short, long, extended, remote, error
    frames): the client logs an error record for each it refuses and keeps working."""
    import random

    rnd = random.Random(9)
    dev = device_cls(vbus, seed=3, timing=FAST).start()
    cl = client_cls(vbus, timeout=2.0)  # generous: a loaded CI machine must not fail it
    crashed: list[BaseException] = []
    old_hook = threading.excepthook
    threading.excepthook = lambda args: crashed.append(args.exc_value)  # type: ignore[arg-type]
    injector = can.Bus(interface="virtual", channel=vbus.split("channel=")[1])
    try:
        cl.wait_online(2.0)
        with caplog.at_level(logging.ERROR, logger="feltlab.rig.clients"):
            for i in range(400):
                off = rnd.randrange(0, 16)
                ext = i % 5 == 0
                arb = ((dev.base + off) << EXT_SHIFT | 0x05EC) if ext else dev.base + off
                if off in (0, 1):  # keep the device's own heartbeat and commands sane
                    data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 7)))
                else:
                    data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 9)))
                injector.send(
                    can.Message(
                        arbitration_id=arb,
                        data=data,
                        is_extended_id=ext,
                        is_remote_frame=i % 97 == 0,
                        dlc=len(data),
                    )
                )
            deadline = time.monotonic() + 2.0
            while cl.decode_errors == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert cl.decode_errors > 0
            assert any(r.levelno >= logging.ERROR for r in caplog.records)
        assert any(e.kind == "decode_error" for e in cl.events)
        cl.ping()  # still healthy: the Notifier thread is alive and commands work
        assert cl.node.notifier._running if hasattr(cl.node.notifier, "_running") else True
        assert crashed == []
    finally:
        threading.excepthook = old_hook
        injector.shutdown()
        cl.close()
        dev.stop()

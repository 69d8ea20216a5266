"""ISO-TP (ISO 15765-2) channels of the rig in real time, over can-isotp: the link's address
and parameters (shared with the simulated bus, :mod:`feltlab.rig.bus.simbus`), the channel
and its transfer error.  A :class:`feltlab.rig.bus.transport.Node` opens them."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import can
import isotp

from feltlab.rig.errors import ProtocolError

log = logging.getLogger("feltlab.rig.bus.transport")  # the transport's logger, as before


class TransferError(ProtocolError):
    """An ISO-TP transfer failed (ISO 15765-2 timeout, sequence error, overflow) or timed
    out; the message names the channel and the cause."""


def isotp_link(
    txid: int, rxid: int, cf_timeout: float, fc_timeout: float, blocksize: int, stmin: int
) -> tuple[isotp.Address, dict[str, Any]]:
    """The can-isotp address (normal 11-bit addressing) and parameters of a rig ISO-TP link,
    in real time (:class:`IsoTpChannel`) and simulated time
    (:class:`feltlab.rig.bus.simbus.SimIsoTpChannel`) alike: N_Cr ``cf_timeout`` and N_Bs
    ``fc_timeout`` in seconds (whole ms, at least 1), the receiver's block size and STmin,
    payloads up to 4095 bytes (ISO 15765-2 classic), non-blocking sends."""
    address = isotp.Address(isotp.AddressingMode.Normal_11bits, txid=txid, rxid=rxid)
    params = {
        "stmin": stmin,
        "blocksize": blocksize,
        "rx_consecutive_frame_timeout": max(1, int(cf_timeout * 1000)),
        "rx_flowcontrol_timeout": max(1, int(fc_timeout * 1000)),
        "max_frame_size": 4095,
        "blocking_send": False,
    }
    return address, params


class _FilteredStack(isotp.NotifierBasedCanStack):
    """NotifierBasedCanStack that buffers only its own receive id (the stock one buffers
    every frame on the bus)."""

    def __init__(self, rxid: int, *args: Any, **kwargs: Any) -> None:
        self._rxid = rxid
        super().__init__(*args, **kwargs)

    def _on_message_received(self, msg: can.Message) -> None:
        if msg.arbitration_id == self._rxid and not msg.is_extended_id:
            super()._on_message_received(msg)


class IsoTpChannel:
    """One ISO-TP (ISO 15765-2) link, normal 11-bit addressing: sends on ``txid``, receives
    on ``rxid``, over a node's shared Notifier.

    ``cf_timeout`` (seconds) is the receiver's consecutive-frame timeout (N_Cr) and
    ``fc_timeout`` the sender's flow-control timeout (N_Bs).
    """

    def __init__(
        self,
        name: str,
        bus: can.BusABC,
        notifier: can.Notifier,
        txid: int,
        rxid: int,
        *,
        cf_timeout: float = 0.25,
        fc_timeout: float = 1.0,
        blocksize: int = 0,
        stmin: int = 0,
        on_payload: Callable[[bytes], None] | None = None,
    ) -> None:
        self.name = name
        self.errors: list[str] = []
        self._error_flag = threading.Event()
        address, params = isotp_link(txid, rxid, cf_timeout, fc_timeout, blocksize, stmin)
        self.stack = _FilteredStack(
            rxid,
            bus,
            notifier,
            address=address,
            error_handler=self._on_error,
            params=params,
            read_timeout=0.02,
        )
        self.stack.start()
        self._stop_rx = threading.Event()
        self._rx_thread: threading.Thread | None = None
        if on_payload is not None:
            self._rx_thread = threading.Thread(
                target=self._rx_loop, args=(on_payload,), name=f"isotp-{name}", daemon=True
            )
            self._rx_thread.start()

    def _rx_loop(self, on_payload: Callable[[bytes], None]) -> None:
        while not self._stop_rx.is_set():
            data = self.stack.recv(block=True, timeout=0.02)
            if data is not None:
                try:
                    on_payload(bytes(data))
                except Exception:  # the receive thread must survive its consumer
                    log.exception("ISO-TP %s: payload handler failed", self.name)

    def _on_error(self, error: Exception) -> None:
        self.errors.append(f"{type(error).__name__}: {error}")
        log.debug("ISO-TP %s: %s", self.name, error)
        self._error_flag.set()

    def send(self, payload: bytes) -> None:
        """Queue ``payload`` (at most 4095 bytes) for transmission; returns at once."""
        self.stack.send(payload)

    def send_and_wait(self, payload: bytes, timeout: float) -> None:
        """Send ``payload`` and wait until the last frame went out.

        Raises :class:`TransferError` if the transfer failed (e.g. no flow control) or did
        not finish within ``timeout`` seconds.
        """
        self._error_flag.clear()
        self.stack.send(payload)
        deadline = time.monotonic() + timeout
        while self.stack.transmitting():
            if self._error_flag.is_set():
                raise TransferError(f"ISO-TP {self.name}: {self.errors[-1]}")
            if time.monotonic() > deadline:
                self.stack.stop_sending()
                raise TransferError(f"ISO-TP {self.name}: send not finished in {timeout:.3f} s")
            time.sleep(0.001)
        if self._error_flag.is_set():
            raise TransferError(f"ISO-TP {self.name}: {self.errors[-1]}")

    def clear(self) -> None:
        """Forget errors and drop any payload already received."""
        self._error_flag.clear()
        while self.stack.available():
            self.stack.recv()

    def recv(self, timeout: float) -> bytes:
        """The next complete payload.

        Raises :class:`TransferError` when the stack reports an error (a lost or corrupted
        frame breaks the sequence or times out N_Cr) or nothing completes within ``timeout``
        seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            data = self.stack.recv(block=True, timeout=0.01)
            if data is not None:
                return bytes(data)
            if self._error_flag.is_set():
                self._error_flag.clear()
                raise TransferError(f"ISO-TP {self.name}: {self.errors[-1]}")
            if time.monotonic() > deadline:
                raise TransferError(f"ISO-TP {self.name}: no payload within {timeout:.3f} s")

    def close(self) -> None:
        self._stop_rx.set()
        if self._rx_thread is not None:
            self._rx_thread.join(timeout=2.0)
        self.stack.stop()

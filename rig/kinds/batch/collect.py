"""The batch shuffler's collection loop: a whole shoe per SHUFFLE, read over ISO-TP, with the
fault campaign's trials between shoes."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import numpy as np

from feltlab import native
from feltlab.rig.certify.collect import CampaignOptions, Collected, sync_capture, wait_back
from feltlab.rig.certify.faults import (
    FaultRunner,
)
from feltlab.rig.certify.profile import Progress
from feltlab.rig.errors import (
    DeviceLost,
    DeviceRefused,
    LimitExceeded,
    RigError,
)
from feltlab.rig.protocol.codec import Result


def collect_shoes(
    opts: CampaignOptions,
    client: Any,
    want: int,
    result: Collected,
    progress: Progress,
    stop: threading.Event,
    faults: FaultRunner | None = None,
    *,
    directory: Path | None = None,
    part: int = 1,
) -> None:
    """Collect ``want`` shoes (:meth:`feltlab.rig.kinds.base.DeviceKind.collect`).  A shoe
    that fails is collected again: after a lost device comes back (within the plan's recovery
    timeout, else the part stops with an error), after a refused SHUFFLE (the fault is
    cleared) and after a failed read; after a reboot the input order is loaded again."""
    decks = int(opts.profile.device.get("decks", 6))
    loaded = native.new_shoe(decks, ids=True)
    l_codes, l_decks = (loaded % 52).astype(np.uint8), (loaded // 52).astype(np.uint8)
    client.load(l_codes, l_decks)
    every = max(1, int(opts.profile.campaign.get("ping_every", 1)))
    back_timeout = faults.plan.recovery_timeout if faults else 5.0

    def rebooted() -> int:
        return sum(1 for e in list(client.events) if e.kind == "reboot")

    reboots = rebooted()
    progress.start("collecting shoes", want)
    for i in range(want):
        if stop.is_set():
            break
        if faults is not None:
            faults.before_sample(i)
        last = ""
        for _attempt in range(4):
            try:
                if rebooted() != reboots:  # a rebooted shuffler forgot its input order
                    reboots = rebooted()
                    client.load(l_codes, l_decks)
                number = client.shuffle()
                shoe = client.read_shoe(number)
            except DeviceLost as exc:
                last = str(exc)
                if not wait_back(client, back_timeout):
                    raise DeviceLost(
                        f"{exc}; not back within {back_timeout:.1f} s: the campaign stops"
                    ) from exc
                continue
            except DeviceRefused as exc:
                last = str(exc)
                if exc.result == Result.BUSY:  # e.g. still booting: give it a moment
                    client.clock.sleep(min(0.05 * 2**_attempt, float(client.timeout)))
                    continue
                with contextlib.suppress(RigError):
                    client.clear_fault()
                continue
            except LimitExceeded:
                raise  # retrying cannot help: the device announced more than it declared
            except RigError as exc:
                last = str(exc)
                continue
            result.done += 1
            if faults is not None:
                faults.shoe_collected(shoe.codes, shoe.card_decks)
            break
        else:
            result.missing.append((i, last))
            if len(result.missing) > max(10, want // 10):
                raise RigError(f"{len(result.missing)} shoes not received; the last: {last}")
        if faults is not None and faults.pending:
            faults.after_sample(limits=opts.profile.limits)
        if i % every == 0:
            if faults is None:
                client.ping()
            else:
                with contextlib.suppress(RigError):
                    client.ping()
        sync_capture(client, i, 100)
        progress.advance()

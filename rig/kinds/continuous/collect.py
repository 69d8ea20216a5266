"""The continuous shuffler's collection loop: one card per DEAL, returned by INSERT."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from feltlab import native
from feltlab.rig.certify.collect import CampaignOptions, Collected, sync_capture
from feltlab.rig.certify.faults import (
    FaultRunner,
)
from feltlab.rig.certify.profile import Progress


def collect_cards(
    opts: CampaignOptions,
    client: Any,
    want: int,
    result: Collected,
    progress: Progress,
    stop: threading.Event,
    *,
    faults: FaultRunner | None = None,
    directory: Path | None = None,
    part: int = 1,
) -> None:
    """Deal and return ``want`` cards (:meth:`feltlab.rig.kinds.base.DeviceKind.collect`)."""
    decks = int(opts.profile.device.get("decks", 6))
    ids = native.new_shoe(decks, ids=True)
    client.load((ids % 52).astype(np.uint8), (ids // 52).astype(np.uint8))
    every = max(1, int(opts.profile.campaign.get("ping_every", 10)))
    progress.start("dealing and returning cards", want)
    for i in range(want):
        if stop.is_set():
            break
        card = client.deal()
        client.insert(card.code, card.deck)
        result.done += 1
        if i % every == 0:
            client.ping()
        sync_capture(client, i, 1000)  # a card is a sample: every 1,000 cards
        progress.advance()

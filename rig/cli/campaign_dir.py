"""The campaign directory of ``feltlab certify``: a new default one (created atomically) and
the checks of ``--resume`` (driven by :mod:`feltlab.rig.cli.certify`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from feltlab.inputs import read_text_regular
from feltlab.rig.errors import RigError
from feltlab.rig.kinds import get_kind


def refuse_resume_options(directory: Path, command: str, given: dict[str, Any]) -> None:
    """``--resume`` continues a campaign exactly as it was started (its campaign.json):
    refuse an option that would change it, and a campaign another command certifies.
    Raises RigError naming them."""
    extra = [name for name, value in given.items() if value is not None]
    if extra:
        raise RigError(
            f"--resume continues the campaign as it was started ({directory / 'campaign.json'}): "
            f"drop {', '.join(extra)}"
        )
    state = directory / "campaign.json"
    try:
        kind = json.loads(read_text_regular(state, "campaign.json", 16 << 20) or "").get("kind")
    except (OSError, ValueError, AttributeError, RecursionError):
        return  # the campaign's own checks say what is wrong with it
    try:
        theirs = get_kind(str(kind)).command
    except RigError:
        return
    if theirs != command:
        raise RigError(
            f"{directory} is a {kind} campaign: continue it with feltlab certify {theirs} "
            f"--resume {directory}"
        )


def new_campaign_dir(kind: str) -> Path:
    """A new default campaign directory, ``feltlab-campaigns/<kind>-<date>-<time>-<us>``,
    created atomically (``mkdir`` without exist_ok: two campaigns started at once never
    share one; a clash takes the next counter)."""
    root = Path("feltlab-campaigns")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RigError(f"cannot create {root}: {exc.strerror or exc}; give --out") from exc
    now = time.time()
    stem = time.strftime(f"{kind}-%Y%m%d-%H%M%S", time.localtime(now))
    stem += f"-{int(now % 1 * 1e6):06d}"
    for n in range(1000):
        path = root / (stem if n == 0 else f"{stem}-{n}")
        try:
            path.mkdir(exist_ok=False)
        except FileExistsError:
            continue
        except OSError as exc:
            raise RigError(f"cannot create {path}: {exc.strerror or exc}; give --out") from exc
        return path
    raise RigError(f"cannot find a free campaign directory name under {root}; give --out")

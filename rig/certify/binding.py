"""Every frame of a campaign's capture bound to its campaign (issue 41, class 2).

A per-campaign key, ``HMAC-SHA256(lab key, "feltlab-campaign-key:v1:" + campaign id)``, is
derived from the **lab key**: 32 random bytes in ``$FELTLAB_LAB_KEY``, else ``lab.key``
beside the lab's freshness state (``$FELTLAB_STATE_DIR``, else ``$XDG_STATE_HOME/feltlab``,
else ``~/.local/state/feltlab``: the host's place, never the campaign folder's nor a
profile's), made on the first campaign (mode 0600). With it:

- every line of a part's journal carries a chained MAC (:func:`feltlab.rig.bus.writer.chain_next`,
  seeded by the journal's header, which names the campaign and part): an edited, reordered,
  spliced or swapped line, or lines appended after a truncation, fail the chain; only the
  last line may fail (torn by a crash), and is then dropped;
- every closed part's entry in ``campaign.json`` carries ``tag`` = HMAC(campaign key,
  part number and the BLF's SHA-256): a BLF swapped in with its SHA-256 rewritten fails it;
- a keyed device's ``freshness-starts.json`` (:data:`FRESHNESS_STARTS`: per part, the
  freshness value the lab had accepted before the part began, where the offline check of
  authenticated results starts each session) carries ``tag`` = HMAC(campaign key, every
  part's start): a start lowered (so that a replay refused live is accepted offline), raised,
  or the file removed, is refused (issue 41).

``--resume`` verifies all three (and refuses on a host whose lab key is not the campaign's);
``feltlab analyze`` verifies them where the campaign's lab key is (elsewhere it checks the
SHA-256s, reads the starts as recorded, and names what it could not verify). What it rests
on: the lab key being unreadable by whoever can write the campaign folder. Someone who can
read the lab key (the same user account, root) can forge a whole part, or its starts; a part
truncated (its last frames dropped, nothing appended) reads as a campaign killed there and is
collected again by ``--resume``; a start is only as right as the lab's freshness state was
when the part began (rolled back with its counter and the key's sidecar, it was recorded
low, and is bound as it was recorded).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
from pathlib import Path
from typing import Any

from feltlab import inputs
from feltlab.rig.atomic import write_atomic
from feltlab.rig.certify.profile import CampaignError
from feltlab.rig.protocol.freshness import default_state_path

log = logging.getLogger("feltlab.rig.certify")

LAB_KEY_FILE = "lab.key"
BINDING_VERSION = 1


def lab_key_path() -> Path:
    """``$FELTLAB_LAB_KEY``, else ``lab.key`` in the lab's state folder
    (:func:`default_state_path`'s)."""
    env = os.environ.get("FELTLAB_LAB_KEY")
    return Path(env).expanduser() if env else default_state_path().with_name(LAB_KEY_FILE)


def lab_key(create: bool = False) -> bytes | None:
    """The lab key (32 bytes), made (mode 0600) when ``create`` and there is none; None when
    there is none. Raises :class:`CampaignError` for a damaged or unreadable one."""
    path = lab_key_path()
    raw = inputs.read_regular(path, "lab key", 1024, error=CampaignError)
    if raw is None and create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another campaign made it meanwhile
            return lab_key()
        except OSError as exc:
            raise CampaignError(
                f"the lab key {path} cannot be made ({exc.strerror or exc}); give a "
                "writable $FELTLAB_LAB_KEY (a file path) or $FELTLAB_STATE_DIR"
            ) from None
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
            f.flush()
            os.fsync(f.fileno())
        raw = inputs.read_regular(path, "lab key", 1024, error=CampaignError)
    if raw is None:
        return None
    try:
        key = bytes.fromhex(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != 32:
        raise CampaignError(f"lab key {path} is damaged (not 64 hex digits)")
    return key


def key_id(lab: bytes) -> str:
    """The lab key's public name in ``campaign.json``: 16 hex digits of a keyed hash."""
    return hmac.new(lab, b"feltlab-lab-key-id:v1", hashlib.sha256).hexdigest()[:16]


def new_binding() -> dict[str, Any]:
    """The ``binding`` of a new campaign's ``campaign.json`` (the lab key made if needed)."""
    lab = lab_key(create=True)
    assert lab is not None
    return {"version": BINDING_VERSION, "lab_key": key_id(lab)}


def campaign_key(state: dict[str, Any], *, strict: bool) -> bytes | None:
    """The key binding the parts of the campaign of ``state`` (its ``campaign.json``).

    Raises :class:`CampaignError` for a campaign.json without a binding (removing it must not
    turn the check off), and, when ``strict`` (``--resume``), on a host whose lab key is not
    the campaign's; otherwise returns None there (logged: nothing verified beyond the
    SHA-256s)."""
    binding = state.get("binding")
    cid = state.get("campaign_id")
    if not isinstance(binding, dict) or binding.get("version") != BINDING_VERSION:
        raise CampaignError(
            f"campaign {cid}'s campaign.json has no binding of its parts (made before "
            "feltlab bound them, or edited): its captures cannot be proved its own; "
            "analyse each capture-NNN.blf as a file"
        )
    lab = lab_key()
    if lab is None or key_id(lab) != binding.get("lab_key"):
        where = "no lab key" if lab is None else f"the lab key {key_id(lab)}"
        text = (
            f"campaign {cid} was bound with lab key {binding.get('lab_key')} and this host "
            f"has {where} ({lab_key_path()})"
        )
        if strict:
            raise CampaignError(f"{text}: resume it on the host that started it")
        log.warning("%s: its parts' frames are not verified here, only their SHA-256", text)
        return None
    return hmac.new(lab, f"feltlab-campaign-key:v1:{cid}".encode(), hashlib.sha256).digest()


def part_tag(key: bytes, part: int, sha256: str) -> str:
    """The MAC binding closed part ``part`` (its BLF's SHA-256) to its campaign."""
    return hmac.new(key, f"feltlab-part:v1:{part}:{sha256}".encode(), hashlib.sha256).hexdigest()


FRESHNESS_STARTS = "freshness-starts.json"
"""Per collection part of a keyed device's campaign, the panel freshness value the lab had
accepted before the part began (the offline check starts each session's verifier there),
bound under the campaign's key."""
STARTS_VERSION = 2
"""Version 1 (before issue 41's binding) was a bare ``{part: value}`` object, refused now."""
MAX_STARTS_BYTES = 1 << 20
"""A campaign's starts file holds one small entry a part (at most 999 parts): a few kB."""


def _starts_tag(key: bytes, starts: dict[int, int]) -> str:
    body = ",".join(f"{part}:{value}" for part, value in sorted(starts.items()))
    return hmac.new(key, f"feltlab-freshness-starts:v1:{body}".encode(), hashlib.sha256).hexdigest()


def _campaign_state(directory: Path) -> dict[str, Any] | None:
    """The ``campaign.json`` of ``directory`` (None when it has none: a lone capture's folder)."""
    raw = inputs.read_regular(directory / "campaign.json", "campaign.json", 16 << 20, CampaignError)
    if raw is None:
        return None
    try:
        state = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise CampaignError(f"{directory / 'campaign.json'} is damaged ({exc})") from None
    if not isinstance(state, dict):
        raise CampaignError(f"{directory / 'campaign.json'} is not a campaign's")
    return state


def freshness_starts(directory: Path | None, *, strict: bool = False) -> dict[int, int]:
    """``{part: freshness}`` of the keyed device's campaign in ``directory``, its tag verified
    under the campaign's key; empty for no directory, or one without a campaign.json (a lone
    capture, each session then checked from 0).

    Raises :class:`CampaignError` for a campaign whose starts are missing, damaged, of
    version 1 (unbound) or fail their tag (edited: a start lowered would let a replay refused
    live through offline).  ``strict`` (``--resume``, collection): also on a host without the
    campaign's lab key (:func:`campaign_key`); otherwise the starts are read as recorded
    there, and a warning says they were not verified."""
    if directory is None:
        return {}
    state = _campaign_state(directory)
    if state is None:
        return {}
    path = directory / FRESHNESS_STARTS
    raw = inputs.read_regular(path, "freshness starts", MAX_STARTS_BYTES, CampaignError)
    if raw is None:
        raise CampaignError(
            f"{path} is missing: the campaign of a keyed device records there the freshness "
            "each part began at, without which its authenticated results cannot be checked "
            "for replays (removed?); restore it from the campaign's folder as it was made"
        )
    try:
        data = json.loads(raw)
        starts = {int(k): int(v) for k, v in data["starts"].items()}
        version, tag = data["version"], str(data["tag"])
    except (ValueError, KeyError, AttributeError, TypeError, RecursionError) as exc:
        raise CampaignError(
            f"{path} is damaged or of an older feltlab (unbound, {type(exc).__name__}); its "
            "campaign's authenticated results cannot be checked for replays"
        ) from None
    if version != STARTS_VERSION:
        raise CampaignError(f"{path} is of version {version!r}, not {STARTS_VERSION}")
    key = campaign_key(state, strict=strict)
    if key is None:
        log.warning("%s is read as recorded: its tag cannot be verified on this host", path)
    elif not hmac.compare_digest(tag, _starts_tag(key, starts)):
        raise CampaignError(
            f"{path} fails its tag under campaign {state.get('campaign_id')}'s key: the "
            "freshness each part began at was edited (a start lowered lets a replay refused "
            "live through offline); restore it from the campaign's folder as it was made"
        )
    return starts


def record_freshness_start(directory: Path, part: int, value: int) -> None:
    """Keep ``value``, the freshness the lab had accepted before part ``part`` of the keyed
    device's campaign in ``directory`` began, in its :data:`FRESHNESS_STARTS` with every
    earlier part's (verified first), under a new tag; written atomically.  Outside a
    campaign folder (no campaign.json) nothing is written.  Raises :class:`CampaignError`."""
    state = _campaign_state(directory)
    if state is None:
        return
    key = campaign_key(state, strict=True)
    assert key is not None  # strict: a host without the campaign's lab key raised
    path = directory / FRESHNESS_STARTS
    starts = freshness_starts(directory, strict=True) if path.exists() else {}
    starts[part] = int(value)
    data = {
        "version": STARTS_VERSION,
        "campaign_id": state.get("campaign_id"),
        "starts": {str(k): v for k, v in sorted(starts.items())},
        "tag": _starts_tag(key, starts),
    }
    write_atomic(path, json.dumps(data, sort_keys=True))


__all__ = [
    "BINDING_VERSION",
    "FRESHNESS_STARTS",
    "LAB_KEY_FILE",
    "STARTS_VERSION",
    "campaign_key",
    "freshness_starts",
    "key_id",
    "lab_key",
    "lab_key_path",
    "new_binding",
    "part_tag",
    "record_freshness_start",
]

"""The lab's memory of each jackpot panel's freshness value, across sessions (issue 14).

SecOC freshness (AUTOSAR SecOC, docs/protocol.md "Authenticated jackpot results") defeats a
replay only while the receiver remembers the last value it accepted. A host that starts every
session at zero accepts, in the next campaign, a result recorded in an earlier one. So the lab
keeps, per panel key, the last complete freshness value accepted, in a state file:

- location: ``[campaign] freshness_state`` of the profile, else ``$FELTLAB_STATE_DIR``, else
  ``$XDG_STATE_HOME/feltlab``, else ``~/.local/state/feltlab``; the file ``freshness.json``;
- written atomically (a temporary file in the same folder, fsync, ``os.replace``);
- tamper-evident: each entry carries an HMAC-SHA256, under the panel's own key, of the key id
  and the value, so an entry lowered by hand (to re-open the door to a replay) is refused with
  :class:`SecurityFault` naming the file;
- monotonic: a value is never lowered.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from feltlab.rig.errors import RigError, SecurityFault
from feltlab.rig.protocol.secoc import DeviceKey

STATE_FILE = "freshness.json"
STATE_VERSION = 1


def default_state_path() -> Path:
    """``$FELTLAB_STATE_DIR`` / ``$XDG_STATE_HOME/feltlab`` / ``~/.local/state/feltlab``,
    then ``freshness.json``."""
    env = os.environ.get("FELTLAB_STATE_DIR")
    if env:
        return Path(env) / STATE_FILE
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "feltlab" / STATE_FILE


def _tag(key: DeviceKey, last: int) -> str:
    msg = f"feltlab-freshness:v{STATE_VERSION}:{key.key_id}:{last}".encode()
    return hmac.new(key.key, msg, hashlib.sha256).hexdigest()


class FreshnessStore:
    """The state file at ``path`` (see the module docstring).

    Raises :class:`RigError` for a file that is not a feltlab freshness state (with its path
    and how to fix it) and :class:`SecurityFault` (reason ``tampered``) for an entry whose
    HMAC does not verify.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_state_path()

    def _read(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {"version": STATE_VERSION, "panels": {}}
        except (OSError, UnicodeDecodeError) as exc:
            raise RigError(f"freshness state {self.path} is not readable ({exc})") from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RigError(
                f"freshness state {self.path} is damaged ({exc.msg}); restore it from the "
                "lab's backup (deleting it re-opens every panel to replays)"
            ) from exc
        if (
            not isinstance(data, dict)
            or data.get("version") != STATE_VERSION
            or not isinstance(data.get("panels"), dict)
        ):
            raise RigError(f"{self.path} is not a feltlab freshness state (version 1)")
        return data

    def last(self, key: DeviceKey) -> int:
        """The last freshness value accepted from the panel of ``key`` (0 if none)."""
        entry = self._read()["panels"].get(key.key_id)
        if entry is None:
            return 0
        if not isinstance(entry, dict) or not isinstance(entry.get("last"), int):
            raise RigError(f"freshness state {self.path}: entry {key.key_id!r} is damaged")
        last = int(entry["last"])
        if not hmac.compare_digest(str(entry.get("hmac", "")), _tag(key, last)):
            raise SecurityFault(
                f"freshness state {self.path}: the entry of panel key {key.key_id!r} fails "
                "its HMAC (edited by hand?); restore the file from the lab's backup",
                "tampered",
            )
        return last

    def remember(self, key: DeviceKey, last: int) -> int:
        """Keep ``last`` for the panel of ``key`` if it is higher than the value kept (never
        lowers it); returns the value now kept. Writes atomically."""
        kept = self.last(key)
        if last <= kept:
            return kept
        data = self._read()
        data["panels"][key.key_id] = {
            "last": int(last),
            "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "hmac": _tag(key, int(last)),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".freshness-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return int(last)


FRESHNESS_STARTS = "freshness-starts.json"
"""Per collection part, the panel freshness value the lab had accepted before the part began
(the offline check starts each session's verifier there)."""


def freshness_starts(directory: Path | None) -> dict[int, int]:
    """``{part: freshness}`` of a campaign directory (empty when none was recorded)."""
    if directory is None or not (directory / FRESHNESS_STARTS).exists():
        return {}
    try:
        raw = json.loads((directory / FRESHNESS_STARTS).read_text())
        return {int(k): int(v) for k, v in raw.items()}
    except (OSError, ValueError, AttributeError) as exc:
        raise RigError(f"{directory / FRESHNESS_STARTS} is damaged ({exc})") from exc

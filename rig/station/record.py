"""The station record: what happened when, one JSON line an event in ``<station folder>/
station-record.jsonl``, appended and flushed to disk (fsync) as it happens, so it survives a
kill -9 or a power cut of the host up to the last event written.

Every line is ``{"t": UTC ISO 8601, "event": ..., "socket": name or null, ...details}``; the
events: ``station-started`` / ``station-resumed`` (pid, host), ``socket-started`` (pid,
``resume``: whether the campaign continued from its journal), ``socket-ended`` (exit code,
verdict, samples), ``socket-stop-requested``, ``socket-resume-requested``, ``socket-stopped``,
``socket-lost`` (found without its process after a crash of the station), ``batch-started``,
``batch-ended``, ``station-ended``.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

RECORD_NAME = "station-record.jsonl"


def utc_now() -> str:
    """Now as UTC ISO 8601 to the millisecond."""
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


class StationRecord:
    """The station record of the station folder ``folder`` (appended to, never rewritten)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / RECORD_NAME

    def add(self, event: str, socket: str | None = None, **detail: Any) -> dict[str, Any]:
        """Append one event (flushed and fsynced before returning) and return it."""
        line = {"t": utc_now(), "event": event, "socket": socket, **detail}
        data = (json.dumps(line, default=str) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            with contextlib.suppress(OSError):
                os.fsync(fd)
        finally:
            os.close(fd)
        return line

    def events(self) -> list[dict[str, Any]]:
        """Every event so far (a torn last line, cut by a crash mid-write, is skipped)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError:
            return []
        out = []
        for raw in text.splitlines():
            with contextlib.suppress(ValueError):
                item = json.loads(raw)
                if isinstance(item, dict):
                    out.append(item)
        return out


__all__ = ["RECORD_NAME", "StationRecord", "utc_now"]

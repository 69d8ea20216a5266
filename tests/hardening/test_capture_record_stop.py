"""Issue 41 (a new user's trip): ``capture record`` killed by SIGTERM (a service manager,
``timeout``) died by the signal, leaving a 0-byte BLF and its frames only in the journal; it
now ends the recording as Ctrl-C does: the BLF closed whole, no journal left, exit 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from feltlab.rig.bus.capture import check_blf_complete

FELTLAB = Path(sys.executable).parent / "feltlab"


def test_sigterm_closes_the_capture(tmp_path: Path) -> None:
    out = tmp_path / "rec.blf"
    bus = f"interface=virtual,channel=sigterm-{os.getpid()}"
    proc = subprocess.Popen(
        [str(FELTLAB), "capture", "record", str(out), "--bus", bus, "--duration", "300"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not out.exists():  # the command has opened its capture (and its handler)
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "capture record never opened its file"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert stdout.strip() == f"0 frames written to {out}"
    check_blf_complete(out)  # closed: its header declares its size
    assert [p.name for p in tmp_path.iterdir()] == ["rec.blf"]  # no journal left behind

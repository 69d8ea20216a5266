"""One socket's process: ``python -m feltlab.rig.station.child PARENT_PID -- ARGS...`` asks
the kernel to kill it if the station's process dies (Linux ``prctl(PR_SET_PDEATHSIG,
SIGKILL)``, which ``execve`` keeps), then becomes ``python -m feltlab.cli ARGS...`` (a
``feltlab certify`` campaign) in the same process: a kill
-9 of the station takes its sockets with it, as a reboot would, and ``feltlab station resume``
continues each campaign from its journal.  Nothing else differs from a lone ``feltlab
certify``: the same command, the same arguments, the same folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies; exit at once if ``parent`` is already gone
    (the station died between the fork and this call)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(137)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] != "--":
        print("usage: python -m feltlab.rig.station.child PARENT_PID -- ARGS...", file=sys.stderr)
        return 2
    die_with_parent(int(argv[0]))
    os.execv(sys.executable, [sys.executable, "-m", "feltlab.cli", *argv[2:]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

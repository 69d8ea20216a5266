"""Side-by-side comparisons for the benchmarks: one subject, feltlab's figure against a named
baseline's measured in the same run, alternating, with the median of the repeats; and the
plain C blackjack simulator of ../shared/peers (built at benchmark time, never copied).

A :class:`Comparison` holds what benchmarks/conftest.py prints as one table per subject:
feltlab's figure, the baseline's, the ratio (how many times faster feltlab is), the target
and whether it is met.  Both sides of a comparison do calls of the same size.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = Path(os.environ.get("FELTLAB_PEERS") or ROOT.parent / "shared" / "peers")
"""../shared/peers relative to the project root (docs: /work/shared/peers/README.md), or
``$FELTLAB_PEERS`` (a checkout elsewhere, e.g. a git worktree outside the project's folder)."""


@dataclass(frozen=True)
class Comparison:
    """One subject: ``feltlab`` and ``baseline`` figures (medians) in ``unit``; ``higher``:
    whether a higher figure is better (rates) or lower (times); ``target``: the ratio to
    reach, or with ``absolute`` the figure feltlab must reach itself; ``size``: the size of
    each call, the same on both sides."""

    subject: str
    feltlab_label: str
    feltlab: float
    baseline_label: str
    baseline: float
    unit: str
    higher: bool
    target: float
    size: str
    repeats: int
    absolute: bool = False
    note: str = ""
    pair_ratio: float | None = None
    """The median over the repeats of each back-to-back pair's feltlab / baseline
    (:func:`alternate_paired`), when measured so: the ratio then reported."""

    @property
    def ratio(self) -> float:
        """How many times better feltlab's figure is than the baseline's: the median of the
        pairs' ratios when there is one, else the ratio of the medians."""
        if self.pair_ratio is not None:
            if self.pair_ratio <= 0:
                return float("nan")
            return self.pair_ratio if self.higher else 1 / self.pair_ratio
        if self.feltlab <= 0 or self.baseline <= 0:
            return float("nan")
        return self.feltlab / self.baseline if self.higher else self.baseline / self.feltlab

    @property
    def met(self) -> bool:
        """Whether the target is reached."""
        if self.absolute:
            return self.feltlab >= self.target if self.higher else self.feltlab <= self.target
        return self.ratio >= self.target


RESULTS: list[Comparison] = []
"""Every comparison of this run, in order (printed by the conftest)."""


def alternate(
    feltlab: Callable[[], float], baseline: Callable[[], float], repeats: int
) -> tuple[float, float]:
    """Run the two measurements alternately ``repeats`` times each (feltlab first, then the
    baseline, and so on) and return their medians."""
    f, b, _ = alternate_paired(feltlab, baseline, repeats)
    return f, b


def alternate_paired(
    feltlab: Callable[[], float], baseline: Callable[[], float], repeats: int
) -> tuple[float, float, float]:
    """:func:`alternate`'s medians, and the median of the pairs' ratios feltlab / baseline:
    each pair is measured back to back, so a shared machine whose speed drifts between pairs
    (seen here: the same run 17 or 23 M rounds/s from one second to the next) moves both sides
    of a pair together and leaves its ratio."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(repeats):
        a.append(feltlab())
        b.append(baseline())
    ratios = [x / y for x, y in zip(a, b, strict=True) if y > 0]
    return statistics.median(a), statistics.median(b), statistics.median(ratios or [0.0])


def wall(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    """Run ``cmd``; return its wall-clock seconds (start to exit) and its stdout.  Raises
    RuntimeError when it fails."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    dt = time.perf_counter() - t0
    if p.returncode:
        raise RuntimeError(f"{cmd[0]} failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    return dt, p.stdout


def user_env() -> dict[str, str]:
    """This environment as a user's shell has it: Python's bytecode cache on (a sandbox's
    ``PYTHONDONTWRITEBYTECODE`` removed, so every start does not compile every module)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def feltlab_command() -> list[str]:
    """The ``feltlab`` console script of this interpreter's environment."""
    script = Path(sys.executable).with_name("feltlab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "feltlab.cli"]


_PLAIN: dict[str, Path] = {}


def plain_bj() -> Path | None:
    """The plain C simulator (../shared/peers/plain_bj.c) compiled with ``gcc -O2`` into a
    temporary build folder (once per run), as its README says; None when the peers folder or
    gcc is missing."""
    if "exe" in _PLAIN:
        return _PLAIN["exe"]
    src = PEERS / "plain_bj.c"
    cc = os.environ.get("CC", "gcc")
    if not src.exists() or shutil.which(cc) is None:
        return None
    build = Path(tempfile.mkdtemp(prefix="feltlab-peers-"))
    exe = build / "plain_bj"
    subprocess.run([cc, "-O2", str(src), "-o", str(exe), "-lm"], check=True, timeout=120)
    _PLAIN["exe"] = exe
    return exe


def plain_run(mode: int, n: int, seed: int = 12345) -> dict[str, float]:
    """Run the plain simulator: ``rounds_per_s`` (its own timing, modes 0 and 1),
    ``ns_per_shuffle`` (mode 3) and ``wall_s`` (the whole process)."""
    exe = plain_bj()
    if exe is None:
        raise RuntimeError(f"no plain simulator: {PEERS / 'plain_bj.c'} or gcc missing")
    dt, out = wall([str(exe), str(mode), str(n), str(seed)])
    res = {"wall_s": dt}
    m = re.search(r"rounds/s=([\d.]+)M", out)
    if m:
        res["rounds_per_s"] = float(m.group(1)) * 1e6
    m = re.search(r"ns/shuffle=([\d.]+)", out)
    if m:
        res["ns_per_shuffle"] = float(m.group(1))
    m = re.search(r"EV=([+-][\d.]+)%", out)
    if m:
        res["ev"] = float(m.group(1)) / 100
    return res

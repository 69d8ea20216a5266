"""Shared pieces of the station's tests: quick device profiles written as TOML files, station
files, and the environment every station command runs in (its own lab state folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from feltlab.rig.certify.profile import quick_profile

FELTLAB = [sys.executable, "-m", "feltlab.cli"]

EIGHT = [
    # 4 batch shufflers, 2 continuous shufflers, 2 jackpot panels (issue 42, Done when)
    {"name": "b1", "kind": "batch", "seed": 11, "shoes": 12, "batch": "A"},
    {"name": "b2", "kind": "batch", "seed": 12, "shoes": 12, "batch": "A"},
    {"name": "b3", "kind": "batch", "seed": 13, "shoes": 12},
    {"name": "b4", "kind": "batch", "seed": 14, "shoes": 12},
    {"name": "c1", "kind": "continuous", "seed": 21, "deals": 40},
    {"name": "c2", "kind": "continuous", "seed": 22, "deals": 40},
    {"name": "j1", "kind": "jackpot", "seed": 31, "draws": 30},
    {"name": "j2", "kind": "jackpot", "seed": 32, "draws": 30},
]
"""The Done-when station: small samples, simulated time."""


def toml(data: dict[str, Any]) -> str:
    """``data`` (one level of tables) as TOML."""
    lines = [f"{k} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for table, values in data.items():
        if isinstance(values, dict):
            lines.append(f"[{table}]")
            lines += [f"{k} = {json.dumps(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def write_profiles(folder: Path) -> dict[str, Path]:
    """The bundled profiles made quick (two named alternatives a dozen shoes catch, 19 null
    replicates), one TOML file a kind."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for kind in ("batch", "continuous", "jackpot"):
        prof = quick_profile(kind, power_shoes=200, null_replicates=19)
        path = folder / f"{kind}.toml"
        path.write_text(toml(prof.raw))
        out[kind] = path
    return out


def write_station(
    path: Path, sockets: list[dict[str, Any]], profiles: dict[str, Path], **head: Any
) -> Path:
    """A station file of ``sockets`` (each a dict with ``kind``: its quick profile)."""
    lines = ["[station]"] + [f"{k} = {json.dumps(v)}" for k, v in head.items()]
    for s in sockets:
        lines.append("[[socket]]")
        entry = {k: v for k, v in s.items() if k != "kind"}
        entry.setdefault("profile", str(profiles[s["kind"]]))
        lines += [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def station_env(state: Path) -> dict[str, str]:
    """The environment of a station command: a lab state folder of the test's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAN_")}
    env["FELTLAB_STATE_DIR"] = str(state)
    return env


def feltlab(
    args: list[str], env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``feltlab ARGS`` in a subprocess, its output captured."""
    return subprocess.run(
        [*FELTLAB, *args], env=env, capture_output=True, text=True, timeout=timeout
    )

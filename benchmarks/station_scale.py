"""The station's scale figures (issue 42 item 4), against the named baseline of the same run: one
socket alone.

    .venv/bin/python benchmarks/station_scale.py sim --sockets 16 --shoes 400
    .venv/bin/python benchmarks/station_scale.py udp --sockets 8 --shoes 200

``sim``: N simulated batch shufflers in simulated time (each on an in-process bus of its own),
``feltlab station run`` with N sockets against the same with 1; ``udp``: N separate ``feltlab
device run batch`` processes over udp_multicast, each on its own group and port, certified in
real time by N sockets (``bus = ...``), against 1 device and 1 socket.  Prints the wall time,
the shoes a second of the station and of the lone socket, their ratio and the load average.
The profile is the bundled batch shuffler made quick (two named alternatives), as the tests'.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from feltlab.rig.certify.profile import quick_profile

FELTLAB = [sys.executable, "-m", "feltlab.cli"]


def _toml(data: dict[str, object]) -> str:
    lines = [f"{k} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for table, values in data.items():
        if isinstance(values, dict):
            lines.append(f"[{table}]")
            lines += [f"{k} = {json.dumps(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def _bus(i: int) -> str:
    return f"interface=udp_multicast,channel=ff11::4242:{i + 1:x},port={43200 + i}"


def _device_opts(prof: Path, i: int) -> list[str]:
    return ["--profile", str(prof), "--seed", str(100 + i)]


def run_station(root: Path, n: int, shoes: int, udp: bool) -> float:
    """Wall seconds of a station of ``n`` sockets of ``shoes`` shoes each."""
    prof = root / "batch.toml"
    if not prof.exists():
        prof.write_text(_toml(quick_profile("batch", power_shoes=200).raw))
    lines = [f'[station]\nname = "scale-{n}"\nlive = false\nout = "{root}/st-{n}-{udp}"']
    for i in range(n):
        lines.append(
            f'[[socket]]\nname = "s{i}"\nprofile = "{prof}"\nseed = {i + 1}\nshoes = {shoes}'
        )
        if udp:
            lines.append(f'bus = "{_bus(i)}"\nseconds_per_sample = 0.05')
    path = root / f"st-{n}-{udp}.toml"
    path.write_text("\n".join(lines) + "\n")
    env = dict(os.environ, FELTLAB_STATE_DIR=str(root / "state"))
    devices = []
    if udp:
        for i in range(n):
            devices.append(
                subprocess.Popen(
                    [*FELTLAB, "device", "run", "batch", "--bus", _bus(i), *_device_opts(prof, i)],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        time.sleep(3.0)  # the devices' heartbeats on their buses
    try:
        t0 = time.monotonic()
        res = subprocess.run(
            [*FELTLAB, "station", "run", str(path)], env=env, capture_output=True, text=True
        )
        wall = time.monotonic() - t0
    finally:
        for d in devices:
            d.terminate()
            d.wait(30)
    if res.returncode not in (0, 3):
        sys.exit(f"station of {n} failed ({res.returncode}): {res.stderr[-2000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["sim", "udp"])
    ap.add_argument("--sockets", type=int, default=16)
    ap.add_argument("--shoes", type=int, default=400)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="feltlab-station-scale-") as tmp:
        root = Path(tmp)
        udp = args.mode == "udp"
        one = run_station(root, 1, args.shoes, udp)
        many = run_station(root, args.sockets, args.shoes, udp)
    r1 = args.shoes / one
    rn = args.sockets * args.shoes / many
    print(
        f"{args.mode}: 1 socket {one:.1f} s ({r1:.1f} shoes/s); {args.sockets} sockets "
        f"{many:.1f} s ({rn:.1f} shoes/s): station rate {rn / r1:.2f}x one socket's; "
        f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()

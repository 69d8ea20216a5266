"""Opt-in: fuzz the C core's entry points under ASan and UBSan for a bounded time.

Run with ``pytest -m fuzz`` (or ``make fuzz``); ``FELTLAB_FUZZ_SECONDS`` sets the budget
(default 30 s).  A positive control first shows that the sanitizer is live in this set-up.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytest import TempPathFactory

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "native" / "fuzz"


@pytest.fixture(scope="module")
def asan_build(tmp_path_factory: TempPathFactory) -> tuple[Path, dict[str, str]]:
    out = tmp_path_factory.mktemp("asan")
    subprocess.run(
        [sys.executable, str(FUZZ / "build_asan.py"), str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    libasan = subprocess.run(
        ["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {**os.environ, "LD_PRELOAD": libasan, "ASAN_OPTIONS": "detect_leaks=0"}
    return out, env


def test_sanitizer_is_live(asan_build: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    out, env = asan_build
    probe = tmp_path / "probe.py"
    probe.write_text(
        f"import sys; sys.path.insert(0, {str(out)!r})\n"
        "from _core_asan import ffi, lib\n"
        "rng = ffi.new('fl_rng *'); lib.fl_rng_seed_xoshiro(rng, 1)\n"
        "lib.fl_shuffle_u8(rng, ffi.new('uint8_t[]', 10), 100)\n"
    )
    r = subprocess.run(
        [sys.executable, str(probe)], env=env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode != 0 and "AddressSanitizer: heap-buffer-overflow" in r.stderr


def test_fuzz_core_entry_points(asan_build: tuple[Path, dict[str, str]]) -> None:
    out, env = asan_build
    seconds = os.environ.get("FELTLAB_FUZZ_SECONDS", "30")
    r = subprocess.run(
        [
            sys.executable,
            str(FUZZ / "fuzz_core.py"),
            str(out),
            "--seconds",
            seconds,
            "--seed",
            os.environ.get("FELTLAB_FUZZ_SEED", "1"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=float(seconds) + 120,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    assert "no crash, no sanitizer report" in r.stdout

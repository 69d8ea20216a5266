"""Run mypy over feltlab as the installed import namespace sees it.

The folders map onto one namespace (sdk/ -> feltlab, plugins/ -> feltlab.plugins, ...), which
mypy cannot follow through an editable install's import hook; so this builds a tree of symlinks
with the installed layout under build/typecheck and checks ``-p feltlab`` there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"
MAPPING = {
    "feltlab": "sdk",
    "feltlab/plugins": "plugins",
    "feltlab/rig": "rig",
    "feltlab/native": "native",
}


def main() -> int:
    shutil.rmtree(TREE, ignore_errors=True)
    for target, source in MAPPING.items():
        dest = TREE / target
        dest.mkdir(parents=True, exist_ok=True)
        for path in sorted((ROOT / source).rglob("*")):
            rel = path.relative_to(ROOT / source)
            if rel.parts[0] in ("tests", "src", "include", "fuzz", "__pycache__") or path.is_dir():
                continue
            if path.suffix in (".py", ".pyi", ".typed"):
                link = dest / rel
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(path)
    return subprocess.call(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "-p",
            "feltlab",
        ],
        cwd=TREE,
    )


if __name__ == "__main__":
    sys.exit(main())

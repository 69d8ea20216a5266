"""Shared click parameter types of feltlab's commands (core and plugins alike)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click


class OutputFile(click.ParamType):  # type: ignore[type-arg]  # generic since click 8.2
    """A file the command will write: its folder must exist and be writable, and the path must
    not be a folder.  Checked when the command starts, before any work is done."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        path = Path(value)
        folder = path.parent if str(path.parent) else Path(".")
        if path.is_dir():
            self.fail(f"{value!r} is a folder; give a file name", param, ctx)
        if not folder.is_dir():
            self.fail(f"folder {str(folder)!r} does not exist; create it first", param, ctx)
        if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            self.fail(f"{value!r} is not writable", param, ctx)
        return path

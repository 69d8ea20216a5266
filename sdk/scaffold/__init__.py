"""``feltlab new wager NAME``: a new side-bet vendor package, ready to install and test.

The package it writes::

    feltlab-<name>/
        pyproject.toml          the `feltlab` entry point  <name> = "feltlab_<name>.plugin"
        README.md               install, test, PAR sheet
        src/feltlab_<name>/__init__.py
        src/feltlab_<name>/plugin.py     a documented WagerType and its register hook
        tests/test_<name>.py    the conformance kit (feltlab.conformance.WagerConformance)

The wager it starts from is deliberately simple (the box's first two cards are suited, 2 to
1; a suited pair 10 to 1) so that every file is short and the tests pass from the first run.
With ``decided="round-end"`` it is a play-decided wager instead, read from the round record
(the dealer busts, 2 to 1, the dealer playing out).

The files are ``str.format`` templates, package data in ``scaffold/templates/`` (``{name}``,
``{dist}``, ``{module}``, ``{title}``, ``{cls}``; literal braces doubled).
"""

from __future__ import annotations

import keyword
import logging
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from feltlab.errors import FeltlabError

log = logging.getLogger(__name__)


def _template(name: str) -> str:
    """The template ``name`` of ``scaffold/templates/`` (``name.tmpl``)."""
    return (resources.files(__package__) / "templates" / f"{name}.tmpl").read_text("utf-8")


class ScaffoldError(FeltlabError, ValueError):
    """A package cannot be created: bad name, name taken, or the directory is not empty."""


@dataclass(frozen=True)
class NewWager:
    """What :func:`new_wager` wrote: the package ``root``, its ``distribution`` and
    ``module`` names, and every file (relative to the root)."""

    root: Path
    distribution: str
    module: str
    files: tuple[str, ...]


def check_name(name: str, taken: list[str]) -> None:
    """Raise :class:`ScaffoldError` unless ``name`` is a lower-case Python identifier that is
    no keyword and not among the ``taken`` wager names."""
    if not (name.isascii() and name.isidentifier()) or keyword.iskeyword(name):
        raise ScaffoldError(
            f"wager name {name!r} is not a Python identifier in ASCII: use lower-case letters, "
            "digits and underscores, starting with a letter (e.g. lucky7, red_queen)"
        )
    if name != name.lower():
        raise ScaffoldError(f"wager name {name!r}: use lower case (e.g. {name.lower()!r})")
    if name in taken:
        raise ScaffoldError(
            f"a wager named {name!r} is already installed (installed: {', '.join(taken)}); "
            "choose another name"
        )


DECIDED = ("initial-deal", "round-end")
"""What the scaffolded wager is decided by: its first two cards, or the round record."""


def new_wager(
    name: str, directory: Path | None = None, *, taken: list[str], decided: str = "initial-deal"
) -> NewWager:
    """Write a wager plugin package for ``name`` into ``directory`` (default
    ``./feltlab-<name>``); ``decided``: one of :data:`DECIDED`.  Raises :class:`ScaffoldError`
    for a bad or taken name, another ``decided``, or when the directory exists and is not
    empty."""
    check_name(name, taken)
    if decided not in DECIDED:
        raise ScaffoldError(f"decided={decided!r}: choose one of {', '.join(DECIDED)}")
    round_end = decided == "round-end"
    dist = f"feltlab-{name.replace('_', '-')}"
    module = f"feltlab_{name}"
    root = Path(directory) if directory is not None else Path.cwd() / dist
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ScaffoldError(
            f"{root} already exists and is not empty: choose another --dir or remove it"
        )
    title = name.replace("_", " ").title()
    cls = "".join(part.capitalize() for part in name.split("_")) or "Wager"
    if cls[0].isdigit():
        cls = "Wager" + cls
    values = {"name": name, "dist": dist, "module": module, "title": title, "cls": cls}
    kind = "round_end" if round_end else "initial_deal"
    files = {
        "pyproject.toml": _template("pyproject.toml"),
        "README.md": _template("README.md"),
        f"src/{module}/__init__.py": _template("__init__.py"),
        f"src/{module}/py.typed": "",
        f"src/{module}/plugin.py": _template(f"plugin_{kind}.py"),
        f"tests/test_{name}.py": _template(f"test_{kind}.py"),
    }
    for rel, template in files.items():
        path = root / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(template.format(**values) if template else "", encoding="utf-8")
        except OSError as exc:
            raise ScaffoldError(
                f"cannot write {path}: {exc.strerror or exc}; give a writable --dir"
            ) from None
        log.info("wrote %s", path)
    return NewWager(root, dist, module, tuple(files))

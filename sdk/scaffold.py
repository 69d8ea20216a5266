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
(the dealer busts, 2 to 1, the dealer playing out; :mod:`feltlab.scaffold_round`).
"""

from __future__ import annotations

import keyword
import logging
from dataclasses import dataclass
from pathlib import Path

from feltlab.errors import FeltlabError

log = logging.getLogger(__name__)


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
    from feltlab import scaffold_round

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
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"src/{module}/__init__.py": INIT,
        f"src/{module}/py.typed": "",
        f"src/{module}/plugin.py": scaffold_round.PLUGIN if round_end else PLUGIN,
        f"tests/test_{name}.py": scaffold_round.TEST if round_end else TEST,
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


PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1.0"
description = "{title}: a blackjack side bet for feltlab"
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["feltlab", "numpy>=1.26"]

[project.optional-dependencies]
test = ["pytest>=8"]

# feltlab finds the wager through this entry point (group `feltlab`).
[project.entry-points.feltlab]
{name} = "{module}.plugin"

[tool.setuptools.packages.find]
where = ["src"]

[tool.setuptools.package-data]
{module} = ["py.typed"]
"""

README = """\
# {dist}

{title}, a blackjack side bet packaged as a [feltlab](https://example.invalid/feltlab) wager
plugin.

```sh
pip install -e .            # registers the wager through the `feltlab` entry point
feltlab plugins             # lists it
feltlab math {name}         # its exact PAR sheet for every deck count it allows
pytest                      # feltlab's conformance kit (tests/test_{name}.py)
```

Edit `src/{module}/plugin.py`: the outcomes, the paytable (cite where its figures come
from) and `classify()`.  The conformance kit checks the hooks, the paytables, that live
settlement agrees with the classifier, that the exact house edge agrees with Monte Carlo,
deck limits, integer cents and determinism.
"""

INIT = '''\
"""{title}: a blackjack side bet for feltlab."""

from {module}.plugin import {cls}

__all__ = ["{cls}"]
'''

PLUGIN = '''\
"""{title}: a feltlab wager plugin (registered through the `feltlab` entry point)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from feltlab import Decided, Limits, Paytable, Placed, WagerType, hookimpl
from feltlab.wagers import as_pays

OUTCOMES = ("lose", "suited", "suited_pair")
"""Outcome indexes: 0 is the losing outcome."""


class {cls}(WagerType):
    """{title}: wins when the box's first two cards are of one suit.

    Placed with the main wager before any card is dealt; decided at the completion of the
    initial deal from the box's first two cards (card roles ``P1``, ``P2``).

    Paytable ``standard`` (to 1): suited pair (same rank and suit) 10, suited 2.
    Source: <cite the paytable's source here>.
    """

    name = "{name}"
    title = "{title}"
    rule = ""
    placed = Placed.BEFORE_DEAL
    decided = Decided.INITIAL_DEAL
    card_roles = ("P1", "P2")
    min_decks = 4
    max_decks = 8
    default_limits = Limits(100, 10_000)  # cents: $1 to $100 in $1 chips
    paytables: ClassVar[Mapping[str, Paytable]] = {{
        "standard": Paytable(
            "standard", OUTCOMES, as_pays([-1, 2, 10]), "<cite the paytable's source here>"
        ),
    }}

    def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        """Outcome index of each ``(n, 2)`` row of card codes (``rank * 4 + suit``)."""
        c = self._checked(cards)
        suited = (c[:, 0] & 3) == (c[:, 1] & 3)
        pair = (c[:, 0] >> 2) == (c[:, 1] >> 2)
        out = np.zeros(len(c), dtype=np.uint8)
        out[suited] = 1
        out[suited & pair] = 2
        return out


@hookimpl
def feltlab_register_wagers(register: Callable[[type[WagerType]], None]) -> None:
    """Register :class:`{cls}`."""
    register({cls})
'''

TEST = '''\
"""{title} against feltlab's conformance kit, and its exact math."""

from fractions import Fraction

from feltlab import parsheet
from feltlab.conformance import WagerConformance
from {module} import {cls}


class Test{cls}Conformance(WagerConformance):
    """Hooks, paytables, settlement, house edge v Monte Carlo, decks, cents, determinism."""

    wager = "{name}"  # found through the `feltlab` entry point: `pip install -e .` first


def test_six_deck_par_sheet():
    sheet = parsheet.par_sheet({cls}(), 6)
    assert sum(line.probability for line in sheet.lines) == 1
    # P(suited) = (13 * 6 - 1) / (52 * 6 - 1) = 77/311, of which a suited pair (6-1)/311
    assert sheet.hit_frequency == Fraction(77, 311)
    # return (72 * 2 + 5 * 10 - 234) / 311: the house keeps 40/311 = 12.86% of each wager
    assert sheet.house_edge == Fraction(40, 311)
'''

"""The vendor docs are checked against the code: hook headings against the hookspecs (the
presence of every hook is tests/sdk/test_hooks.py's job), the PAR sheet format against
ParSheet.to_dict(), the tutorial against the conformance kit and the example package."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from feltlab_sidebets import TwentyOnePlusThree

from feltlab import hookspecs, parsheet
from feltlab.conformance import WagerConformance

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_hook_headings_have_the_hookspec_parameters() -> None:
    doc = (DOCS / "plugins.md").read_text(encoding="utf-8")
    headings = re.findall(r"^### `(feltlab_\w+)\(([^)]*)\)`", doc, flags=re.M)
    assert headings, "docs/plugins.md: no hook headings"
    for name, params in headings:
        spec = getattr(hookspecs, name, None)
        assert spec is not None, f"docs/plugins.md documents {name}, which is no hook"
        want = list(inspect.signature(spec).parameters)
        got = [p.strip() for p in params.split(",") if p.strip()]
        assert got == want, f"docs/plugins.md: {name}({', '.join(want)}), not ({params})"


def test_par_sheet_doc_covers_every_json_field() -> None:
    doc = (DOCS / "par-sheet.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(\w+)` \|", doc, flags=re.M))
    sheet = parsheet.par_sheet(TwentyOnePlusThree(), 6).to_dict()
    fields = set(sheet) | set(sheet["outcomes"][0])
    fields |= set(sheet["house_edge"])  # exact, value
    assert fields <= documented, f"docs/par-sheet.md: document {fields - documented}"
    assert documented <= fields, f"docs/par-sheet.md documents unknown {documented - fields}"


def test_tutorial_names_every_check_and_existing_files() -> None:
    doc = (DOCS / "writing-a-wager.md").read_text(encoding="utf-8")
    checks = [n for n in dir(WagerConformance) if n.startswith("test_")]
    assert len(checks) == 8
    missing = [c for c in checks if f"`{c}`" not in doc]
    assert not missing, f"docs/writing-a-wager.md: describe {missing}"
    for path in re.findall(r"`(examples/[\w./-]+)`", doc):
        assert (ROOT / path).exists(), f"docs/writing-a-wager.md names missing {path}"
    for attr in ("wager", "plugin", "paytables", "rules", "decks", "rounds", "seed", "confidence"):
        assert hasattr(WagerConformance, attr) and f"`{attr}`" in doc, attr

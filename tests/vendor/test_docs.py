"""The vendor docs are checked against the code: the hook reference in docs/plugins.md is
generated from sdk/hookspecs.py (its section banners and docstrings: ``python
tests/vendor/test_docs.py`` rewrites it) and must equal it, hook headings carry the hookspecs'
parameters (the presence of every hook is tests/sdk/test_hooks.py's job), the PAR sheet format
matches ParSheet.to_dict(), the tutorial the conformance kit and the example package."""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from pathlib import Path

from feltlab_sidebets import TwentyOnePlusThree

from feltlab import hookspecs
from feltlab.conformance import WagerConformance
from feltlab.math import parsheet

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BEGIN = (
    "<!-- hook reference: generated from sdk/hookspecs.py by `python tests/vendor/test_docs.py` -->"
)
END = "<!-- end of the hook reference -->"
_BANNER = re.compile(r"^# -{20,}\n((?:# .*\n)+)# -{20,}\n", re.M)
_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr):`~?([^`]+)`")


def _md(text: str) -> str:
    """reST inline markup as Markdown: roles and double back-quotes as code."""
    return _ROLE.sub(r"`\1`", text).replace("``", "`")


def _fill(text: str, prefix: str = "") -> str:
    return textwrap.fill(
        _md(" ".join(text.split())),
        100,
        initial_indent=prefix,
        subsequent_indent="  " if prefix else "",
        break_long_words=False,
        break_on_hyphens=False,
    )


def _hook_doc(doc: str) -> str:
    """A hookspec's docstring as Markdown: paragraphs filled, ``:param x:`` as a list."""
    out: list[str] = []
    for para in doc.split("\n\n"):
        params = re.split(r"^:param (\w+): ", para, flags=re.M)
        if len(params) == 1:
            out.append(_fill(para))
            continue
        pairs = zip(params[1::2], params[2::2], strict=True)
        items = [_fill(text, f"- `{name}`: ") for name, text in pairs]
        out.append("\n".join(items))
    return "\n\n".join(out)


def hook_reference() -> str:
    """The hook reference of docs/plugins.md, from sdk/hookspecs.py: a section per banner
    (its title before the colon, its text after), a heading and the docstring per hook."""
    src = inspect.getsource(hookspecs)
    banners = list(_BANNER.finditer(src))
    out: list[str] = []
    for i, m in enumerate(banners):
        text = " ".join(line[2:] for line in m.group(1).splitlines())
        title, _, intro = text.partition(": ")
        out.append(f"## {title}\n\n{_fill(intro[:1].upper() + intro[1:])}")
        end = banners[i + 1].start() if i + 1 < len(banners) else len(src)
        for name in re.findall(r"^def (feltlab_\w+)\(", src[m.end() : end], flags=re.M):
            fn = getattr(hookspecs, name)
            params = ", ".join(inspect.signature(fn).parameters)
            out.append(f"### `{name}({params})`\n\n{_hook_doc(inspect.getdoc(fn) or '')}")
    return "\n\n".join(out)


def _documented_reference(doc: str) -> str:
    start, end = doc.find(BEGIN), doc.find(END)
    assert 0 <= start < end, f"docs/plugins.md: the hook reference lies between {BEGIN} and {END}"
    return doc[start + len(BEGIN) : end].strip()


def test_the_hook_reference_is_generated_from_the_hookspecs() -> None:
    doc = (DOCS / "plugins.md").read_text(encoding="utf-8")
    assert _documented_reference(doc) == hook_reference(), (
        "docs/plugins.md's hook reference differs from sdk/hookspecs.py: run "
        "`python tests/vendor/test_docs.py` to regenerate it"
    )


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
    assert len(checks) == 9
    missing = [c for c in checks if f"`{c}`" not in doc]
    assert not missing, f"docs/writing-a-wager.md: describe {missing}"
    for path in re.findall(r"`(examples/[\w./-]+)`", doc):
        assert (ROOT / path).exists(), f"docs/writing-a-wager.md names missing {path}"
    attrs = ("wager", "plugin", "paytables", "rules", "decks", "rounds", "seed", "confidence")
    for attr in (*attrs, "protection_counts", "protection_rounds", "allow_countable"):
        assert hasattr(WagerConformance, attr) and f"`{attr}`" in doc, attr


if __name__ == "__main__":  # rewrite the hook reference of docs/plugins.md
    path = DOCS / "plugins.md"
    doc = path.read_text(encoding="utf-8")
    old = _documented_reference(doc)
    path.write_text(doc.replace(old, hook_reference()), encoding="utf-8")
    sys.exit(0)

"""The guard rails of issue 38 item 4, checked on the source (docs/design.md, "Guard rails"):

- no module reaches a private attribute (``obj._x``, ``module._x``) that another module defines;
- no ``__all__`` outside a package's ``__init__.py`` lists a name the module does not define
  (a name is imported from its one public home, never through a re-export);
- a function-level import carries a reason on its line from a small vocabulary (start-up, a
  pytest11 plugin, a child process, an optional dependency: ``LAZY_REASONS``), and defers
  something: a module of the rooms its own module does not load already;
- no C function of ``native/`` is over 100 lines (a shrinking allow-list, like Python's in
  tests/test_layout.py);
- every path and dotted ``feltlab.`` name that docs/design.md, a comment or a docstring cites
  exists, and docs/design.md names every Python module and every C file.

Each allow-list may shrink, never grow: an entry that no longer matches the source fails the
test too, so the list is cut when its site is fixed. The checks read the source (``ast``, no
import of the checked modules): the file takes about 5 CPU-seconds, most of it parsing the
four rooms once (measured with 2 cores under a load of 20: 20 s wall)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
import tomllib
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

from tests.test_layout import typing_only_nodes

ROOT = Path(__file__).resolve().parent.parent
ROOMS = {"sdk": "feltlab", "plugins": "feltlab.plugins", "rig": "feltlab.rig",
         "native": "feltlab.native"}  # fmt: skip
DESIGN = ROOT / "docs" / "design.md"


@cache
def rail_modules() -> dict[str, Path]:
    """Every module of the four rooms by its import name (a package by its ``__init__``)."""
    out = {}
    for room, package in ROOMS.items():
        for p in sorted((ROOT / room).rglob("*.py")):
            if "fuzz" in p.parts:
                continue
            rel = p.relative_to(ROOT / room).with_suffix("").parts
            out[".".join((package, *rel)).removesuffix(".__init__")] = p
    return out


@cache
def rail_tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def rail_rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# ============================================================ private attributes of another module
PUBLIC_DESPITE_UNDERSCORE = {"os._exit"}
"""Standard-library names that are public though spelled with an underscore."""

PRIVATE_REACH_ALLOWED: dict[str, str] = {}
"""``"<file> <expression>"`` -> why it stays for now. Shrinks, never grows."""


def _own_attributes(tree: ast.Module) -> set[str]:
    """The names a module defines itself: its functions, classes, globals, class-body names and
    the attributes its methods set on ``self`` / ``cls``."""
    own: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.add(n.name)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            own.add(n.id)
        elif (
            isinstance(n, ast.Attribute)
            and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name)
            and n.value.id in ("self", "cls")
        ):
            own.add(n.attr)
    return own


def rail_private_reaches() -> Counter[str]:
    sites: Counter[str] = Counter()
    for path in rail_modules().values():
        tree = rail_tree(path)
        own = _own_attributes(tree)
        for n in ast.walk(tree):
            if not isinstance(n, ast.Attribute):
                continue
            name = n.attr
            # _x is private; __x__ is a dunder and _x_ an enum's sunder name
            if not name.startswith("_") or name.startswith("__") or name.endswith("_"):
                continue
            base = ast.unparse(n.value)
            if base in ("self", "cls") or base.startswith("super(") or name in own:
                continue
            if f"{base}.{name}" in PUBLIC_DESPITE_UNDERSCORE:
                continue
            sites[f"{rail_rel(path)} {base}.{name}"] += 1
    return sites


def test_no_private_attribute_of_another_module() -> None:
    sites = rail_private_reaches()
    new = sorted(s for s in sites if s not in PRIVATE_REACH_ALLOWED)
    gone = sorted(s for s in PRIVATE_REACH_ALLOWED if s not in sites)
    assert not new, (
        f"private attributes reached from outside the module that defines them: {new}; give "
        "the owner a public name (a property, a method, a constructor argument) and use it"
    )
    assert not gone, (
        f"fixed sites still in the allow-list: {gone}; delete them from "
        "PRIVATE_REACH_ALLOWED in tests/test_guard_rails.py"
    )


# =========================================================== __all__ re-exports outside __init__
def _defined_at_top(tree: ast.Module) -> set[str]:
    """Names a module binds itself at its top level (imports excluded)."""
    names: set[str] = set()
    for stmt in tree.body:
        for n in [stmt, *ast.walk(stmt)] if isinstance(stmt, ast.If | ast.Try) else [stmt]:
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(n.name)
            elif isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                names.update(x.id for t in targets for x in ast.walk(t) if isinstance(x, ast.Name))
    return names


def rail_reexports() -> list[str]:
    out = []
    for path in rail_modules().values():
        if path.name == "__init__.py":
            continue
        tree = rail_tree(path)
        own = _defined_at_top(tree)
        for stmt in tree.body:
            if not (
                isinstance(stmt, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets)
            ):
                continue
            assert isinstance(stmt.value, ast.List | ast.Tuple), (
                f"{rail_rel(path)}: __all__ literal"
            )
            for e in stmt.value.elts:
                assert isinstance(e, ast.Constant) and isinstance(e.value, str)
                if e.value not in own:
                    out.append(f"{rail_rel(path)}:{stmt.lineno} {e.value}")
    return out


def test_no_all_reexport_outside_a_package_init() -> None:
    wrong = rail_reexports()
    assert not wrong, (
        f"__all__ lists names the module imports, not defines: {wrong}; import each from the "
        "module that defines it (its one public home) and drop it from this __all__"
    )


# ========================================================================= function-level imports
PRAGMA = re.compile(r"^#\s*(noqa|type:|pragma|fmt:)")
LAZY_REASONS = ("start-up", "pytest11", "child process", "optional")
"""The reasons a function-level import may give, first on its line's comment (after any tool
pragma), alone or followed by ``: <detail>``:

- ``start-up``: what imports this module (a command, the ``feltlab`` group, a campaign) does
  not need the deferred one: ``# start-up: matplotlib only when a plot is asked for``;
- ``pytest11``: the module is loaded by every pytest run (a ``pytest11`` entry point's package);
- ``child process``: it runs in a forked or spawned process;
- ``optional: <package>``: an optional dependency (``[project.optional-dependencies]``),
  the package the line imports.

No ``cycle``: tests/test_layout.py's ``test_no_import_cycle`` counts function-level imports, so
deferring an import never breaks a cycle."""
LAZY_REASON = re.compile(r"(start-up|pytest11|child process|optional)(?::\s*(\S.*))?$")


def _reason(line: str) -> str | None:
    """The reason an import line's ``#`` comment gives (an import statement holds no string,
    so its first ``#`` starts the comment): its first part that is no tool pragma, or None."""
    _, hash_, comment = line.partition("#")
    parts = [p.strip() for p in comment.split("#")] if hash_ else []
    said = [p for p in parts if p and not PRAGMA.match("# " + p)]
    return said[0] if said else None


@cache
def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _optional_packages() -> set[str]:
    """The import names of ``[project.optional-dependencies]``: each requirement's name and the
    extras it asks for (``dask[distributed]`` gives ``dask`` and ``distributed``)."""
    names = set()
    for reqs in _pyproject()["project"].get("optional-dependencies", {}).values():
        for req in reqs:
            m = re.match(r"([\w.-]+)(?:\[([\w,.-]+)\])?", req)
            assert m, req
            names.add(m.group(1).replace("-", "_"))
            names.update(x.replace("-", "_") for x in (m.group(2) or "").split(",") if x)
    return names


def _pytest11_packages() -> set[str]:
    return set(_pyproject()["project"].get("entry-points", {}).get("pytest11", {}).values())


def _lazy_targets(n: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement loads (``from a import b``: ``a.b`` when it is one of
    the rooms' modules, else ``a``)."""
    if isinstance(n, ast.Import):
        return [a.name for a in n.names]
    assert n.module and n.level == 0, "feltlab uses absolute imports"
    mods = rail_modules()
    return [f"{n.module}.{a.name}" if f"{n.module}.{a.name}" in mods else n.module for a in n.names]


def _wrong_reason(module: str, reason: str, n: ast.Import | ast.ImportFrom) -> str | None:
    """Why ``reason`` does not hold for the import ``n`` of ``module`` (None: it holds)."""
    m = LAZY_REASON.match(reason)
    if not m:
        return f"{reason!r} is none of {', '.join(LAZY_REASONS)}"
    kind, detail = m.groups()
    if kind == "optional":
        tops = {t.split(".")[0] for t in _lazy_targets(n)}
        if detail not in _optional_packages() or detail not in tops:
            return (
                f"'optional: {detail}' names no optional dependency this line imports "
                f"(imports {sorted(tops)}, optional: {sorted(_optional_packages())})"
            )
    if kind == "pytest11" and not any(
        module == p or module.startswith(p + ".") for p in _pytest11_packages()
    ):
        return f"{module} is in no pytest11 entry point's package {sorted(_pytest11_packages())}"
    return None


@cache
def _top_level_imports(module: str) -> frozenset[str]:
    """The modules ``module`` imports when it is imported: its statements outside functions
    (``if TYPE_CHECKING:`` aside), each with its parent packages."""
    tree = rail_tree(rail_modules()[module])
    skip = typing_only_nodes(tree) | {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for n in ast.walk(f)
    }
    out: set[str] = set()
    for n in ast.walk(tree):
        if id(n) not in skip and isinstance(n, ast.Import | ast.ImportFrom):
            for t in _lazy_targets(n):
                parts = t.split(".")
                out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(out)


def rail_loaded_with(module: str) -> set[str]:
    """Every module that importing ``module`` loads, by reading the rooms' source: the rooms'
    modules through their top-level imports, and the first outside module each one names."""
    mods = rail_modules()
    parts = module.split(".")
    todo = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    seen: set[str] = set()
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            if m in mods:
                todo.extend(_top_level_imports(m))
    return seen


def _computed(n: ast.Import | ast.ImportFrom) -> bool:
    """Whether ``n`` takes a name that its module computes on first use (a PEP 562
    ``__getattr__``, as ``feltlab.__version__`` reads the installed metadata): such an import
    defers that work even when the module is loaded."""
    mods = rail_modules()
    if not isinstance(n, ast.ImportFrom) or n.module not in mods:
        return False
    getattrs = [
        f
        for f in rail_tree(mods[n.module]).body
        if isinstance(f, ast.FunctionDef) and f.name == "__getattr__"
    ]
    named = {c.value for f in getattrs for c in ast.walk(f) if isinstance(c, ast.Constant)}
    return any(a.name in named for a in n.names)


def rail_function_imports() -> dict[str, list[str]]:
    """File -> ``"<line>: <why it is wrong>"`` for each function-level import that gives no
    reason of :data:`LAZY_REASONS` on its lines, gives a wrong one, or defers nothing (every
    module of the rooms it imports is loaded with its own module already). ``if
    TYPE_CHECKING:`` imports aside: they never run."""
    out: dict[str, list[str]] = {}
    for module, path in rail_modules().items():
        tree = rail_tree(path)
        typing = typing_only_nodes(tree)
        text = path.read_text().splitlines()
        found: dict[int, str] = {}
        for f in ast.walk(tree):
            if not isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for n in ast.walk(f):
                if not isinstance(n, ast.Import | ast.ImportFrom) or id(n) in typing:
                    continue
                span = range(n.lineno, (n.end_lineno or n.lineno) + 1)
                reasons = [r for i in span if (r := _reason(text[i - 1]))]
                ours = [t for t in _lazy_targets(n) if t.startswith("feltlab")]
                if not reasons:
                    found[n.lineno] = "no reason"
                elif wrong := _wrong_reason(module, reasons[0], n):
                    found[n.lineno] = wrong
                elif ours and set(ours) <= rail_loaded_with(module) and not _computed(n):
                    found[n.lineno] = f"defers nothing: {module} loads {ours} already"
        if found:
            out[rail_rel(path)] = [f"{line}: {why}" for line, why in sorted(found.items())]
    return out


def test_function_level_imports_say_why() -> None:
    found = rail_function_imports()
    assert not found, (
        f"function-level imports that should be at the top of their module: {found}; move "
        "each to the top, or, if it must stay, say why on its line with one of "
        f"{LAZY_REASONS} (tests/test_guard_rails.py, LAZY_REASONS), e.g. "
        "`import jinja2  # start-up: only the report needs it`"
    )


def test_the_lazy_import_rule_reads_reasons_as_claimed() -> None:
    """Known lines: a reason of the vocabulary, a pragma before it, none, a made-up one."""
    assert _reason("    import rich  # noqa: F401  # start-up: rich only to print") == (
        "start-up: rich only to print"
    )
    assert _reason("    import rich  # noqa: F401") is None
    assert _reason("    import rich") is None
    plain = ast.parse("import rich").body[0]
    dask = ast.parse("from dask.distributed import Client").body[0]
    assert isinstance(plain, ast.Import) and isinstance(dask, ast.ImportFrom)
    assert _wrong_reason("feltlab.cli", "start-up", plain) is None
    assert _wrong_reason("feltlab.cli", "child process", plain) is None
    assert _wrong_reason("feltlab.cli", "optional: dask", dask) is None
    assert _wrong_reason("feltlab.cli", "optional: rich", plain) is not None  # a required one
    assert _wrong_reason("feltlab.cli", "optional: dask", plain) is not None  # not this line's
    assert _wrong_reason("feltlab.conformance.evidence", "pytest11", plain) is None
    assert _wrong_reason("feltlab.cli", "pytest11", plain) is not None
    assert _wrong_reason("feltlab.cli", "on use", plain) is not None
    assert _wrong_reason("feltlab.cli", "cycle: feltlab.rules", plain) is not None
    # the closure reads top-level imports only: feltlab.cli's group defers its commands
    assert "feltlab.cli.options" in rail_loaded_with("feltlab.cli")
    assert "feltlab.cli.simulate" not in rail_loaded_with("feltlab.cli")


# ============================================================================ C function length
MAX_C_FUNCTION_LINES = 100
LONG_C_FUNCTIONS_CEILING: dict[str, int] = {}
"""``"native/src/<file>.c:<function>"`` -> its length when the rule came (issue 38): each may
shrink, never grow, and leaves the list once under the limit."""
C_ATTRIBUTE = re.compile(r"__attribute__\s*\(\(.*?\)\)", re.S)
C_NAME = re.compile(r"([A-Za-z_]\w*)\s*\(")


def _c_blank(text: str) -> str:
    """``text`` with comments, strings and character literals blanked (newlines kept)."""

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    pattern = r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
    text = re.sub(pattern, blank, text, flags=re.S)
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", blank, text, flags=re.M)  # preprocessor
    return re.sub(r"\bextern\s*\{", blank, text)  # extern "C" { (its string blanked above)


def rail_c_functions(source: str) -> dict[str, int]:
    """Function name -> lines from its name's line to its closing brace, for every function
    defined in the C ``source`` (a brace at depth 0 that follows a ``name(...)`` header)."""
    text = _c_blank(source)
    out: dict[str, int] = {}
    depth, head, start_name = 0, 0, None
    start_line = 0
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                header = C_ATTRIBUTE.sub(lambda m: " " * len(m.group(0)), text[head:i])
                first = header.lstrip().split(None, 1)[0] if header.strip() else ""
                m = C_NAME.search(header)
                if (
                    m
                    and first not in ("struct", "union", "enum", "typedef")
                    and "=" not in (header[: m.start()])
                ):
                    start_name = m.group(1)
                    start_line = text.count("\n", 0, head + header.index(m.group(0))) + 1
            depth += 1
        elif ch == "}":
            depth = max(depth - 1, 0)  # an extern "C" block's own brace closes nothing
            if depth == 0:
                if start_name is not None:
                    out[start_name] = text.count("\n", 0, i) + 1 - start_line + 1
                start_name = None
                head = i + 1
        elif ch == ";" and depth == 0:
            head = i + 1
        elif ch == "\n" and depth == 0 and text[head:i].lstrip().startswith("#"):
            head = i + 1  # a preprocessor line ends a header
    return out


def rail_c_files() -> list[Path]:
    return sorted(
        [*(ROOT / "native" / "src").glob("*.[ch]"), *(ROOT / "native" / "include").glob("*.h")]
    )


def test_no_c_function_over_100_lines() -> None:
    lengths = {
        f"{rail_rel(p)}:{name}": n
        for p in rail_c_files()
        for name, n in rail_c_functions(p.read_text()).items()
    }
    long = {
        k: n
        for k, n in lengths.items()
        if n > LONG_C_FUNCTIONS_CEILING.get(k, MAX_C_FUNCTION_LINES)
    }
    assert not long, (
        f"C functions over {MAX_C_FUNCTION_LINES} lines (or grown past their ceiling): {long}; "
        "split them along what they do (a helper per phase, static in the same file)"
    )
    shrunk = {
        k: f"{c} -> {lengths.get(k, 'gone')}"
        for k, c in LONG_C_FUNCTIONS_CEILING.items()
        if lengths.get(k, 0) < c
    }
    assert not shrunk, (
        f"C functions shorter than their ceiling: {shrunk}; lower their entries in "
        "LONG_C_FUNCTIONS_CEILING in tests/test_guard_rails.py (delete those at or under "
        f"{MAX_C_FUNCTION_LINES} lines or gone)"
    )


def test_the_c_function_rule_measures_what_it_claims() -> None:
    """The brace counter on a known shape: comments, strings and a struct do not fool it."""
    src = (
        "#define V(x) ((cfg){1, x})\n"
        'extern "C" {\n'
        "struct s { int a; };\n"
        'static const char *t = "{";\n'
        "/* f( { */\n"
        "static __attribute__((noinline)) int f(int a,\n"
        "                                      int b) {\n"
        "    if (a) { return '}'; }\n"
        "    return b;\n"
        "}\n"
        "int g(void) { return 0; }\n"
        "}\n"
    )
    assert rail_c_functions(src) == {"f": 5, "g": 1}


# ============================================================ citations in the map and the comments
CITED_PATH = re.compile(
    r"(?<![\w./~<-])((?:sdk|rig|plugins|native|tests|docs|benchmarks|examples)/[\w./-]*[\w/])"
    r"(?![\w<{*])"
)
CITED_NAME = re.compile(r"(?<![\w./-])feltlab(?:\.[A-Za-z_]\w*)+")
MAP_FILE = re.compile(r"`([\w/.-]+\.(?:py|c|h))`")
CITED_ON_PURPOSE = {
    ("docs/design.md", "rig/feltlab/rig/"): "the layout not chosen, cited as such",
    ("tests/sdk/test_seeds.py", "rig/seeds.py"): "a file the test says is gone",
}
"""``(citing file, cited path)`` -> why it need not exist. Shrinks, never grows."""

BUILD_OUTPUTS = {"native/tests/build": "make test-native's objects, made on its run"}
"""Cited paths a build makes: they exist or not by what ran before (``make test`` builds
``native/tests/build`` before the Python tests), so they are neither stale nor 'no longer
cited' either way."""


def _citing_files() -> list[Path]:
    files = [DESIGN]
    for d in ("sdk", "rig", "plugins", "native", "tests", "benchmarks"):
        files += sorted(p for p in (ROOT / d).rglob("*.py") if "build" not in p.parts)
    files += sorted(p for p in (ROOT / "native").rglob("*.[ch]") if "build" not in p.parts)
    return files


def _in_prose(path: Path, line: int, col: int) -> bool:
    """Whether ``line``:``col`` of ``path`` lies in a comment or a docstring (anywhere in a
    Markdown file)."""
    src = path.read_text()
    if path.suffix == ".md":
        return True
    if path.suffix in (".c", ".h"):
        offset = sum(len(x) + 1 for x in src.split("\n")[: line - 1]) + col
        return any(
            m.start() <= offset < m.end() for m in re.finditer(r"/\*.*?\*/|//[^\n]*", src, re.S)
        )
    for t in tokenize.generate_tokens(io.StringIO(src).readline):
        if t.type == tokenize.COMMENT and t.start[0] == line and t.start[1] <= col:
            return True
    return any(
        n.lineno <= line <= (n.end_lineno or n.lineno)
        for n in ast.walk(ast.parse(src))
        if isinstance(n, ast.Expr)
        and isinstance(n.value, ast.Constant)
        and isinstance(n.value.value, str)
    )


@cache
def rail_broken_citations() -> list[tuple[str, int, str]]:
    """(citing file, line, what is cited) of every path or name cited in prose that does not
    exist. The whole text is searched first (fast); a miss counts only in prose."""
    out = []
    for path in _citing_files():
        text = path.read_text()
        for kind, pattern in (("path", CITED_PATH), ("name", CITED_NAME)):
            for m in pattern.finditer(text):
                cited = m.group(m.lastindex or 0)
                if kind == "path" and (ROOT / cited.rstrip("/.")).exists():
                    continue
                if kind == "name" and _resolves(cited):
                    continue
                line = text.count("\n", 0, m.start()) + 1
                col = m.start() - (text.rfind("\n", 0, m.start()) + 1)
                if _in_prose(path, line, col):
                    out.append((rail_rel(path), line, cited))
    return out


@cache
def _top_bindings(path: Path) -> dict[str, ast.AST]:
    """Names bound at the top level of a module (definitions, assignments and imports)."""
    out: dict[str, ast.AST] = {}
    for stmt in rail_tree(path).body:
        for n in [stmt, *ast.walk(stmt)] if isinstance(stmt, ast.If | ast.Try) else [stmt]:
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                out[n.name] = n
            elif isinstance(n, ast.Assign | ast.AnnAssign):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for x in (x for t in targets for x in ast.walk(t) if isinstance(x, ast.Name)):
                    out[x.id] = n
            elif isinstance(n, ast.Import | ast.ImportFrom):
                for a in n.names:
                    out[(a.asname or a.name).split(".")[0]] = n
    return out


def _class_members(cls: ast.ClassDef) -> set[str]:
    names = {
        x.id
        for n in cls.body
        if isinstance(n, ast.Assign | ast.AnnAssign)
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        for x in ast.walk(t)
        if isinstance(x, ast.Name)
    }
    names |= {n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    names |= {
        n.attr
        for n in ast.walk(cls)
        if isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Store)
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
    }
    return names


def _resolves(name: str, hops: int = 0) -> bool:
    """Whether the dotted ``name`` exists: a module of the four rooms, then a name bound at its
    top level (followed through ``from feltlab... import``), then a member of that class (a
    class with bases may inherit it: accepted)."""
    mods = rail_modules()
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        if module in mods or module == "feltlab.native._core":
            break
    else:
        return False
    rest = parts[i:]
    if not rest or module == "feltlab.native._core":
        return True
    node = _top_bindings(mods[module]).get(rest[0])
    if node is None:
        return False
    if len(rest) == 1:
        return True
    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("feltlab"):
        real = next(a.name for a in node.names if (a.asname or a.name) == rest[0])
        return hops < 5 and _resolves(".".join([node.module, real, *rest[1:]]), hops + 1)
    if isinstance(node, ast.ClassDef):
        return rest[1] in _class_members(node) or bool(node.bases)
    return True


def test_every_cited_path_and_name_exists() -> None:
    broken = [b for b in rail_broken_citations() if b[2] not in BUILD_OUTPUTS]
    stale = [f"{w}:{line} {c}" for w, line, c in broken if (w, c) not in CITED_ON_PURPOSE]
    assert not stale, (
        f"citations of paths or names that do not exist: {stale}; correct each to where the "
        "code lives now (git log --follow, grep -rn 'def NAME'), or, if it is cited on purpose "
        "(a file that is gone, a build output), add it to CITED_ON_PURPOSE with the reason"
    )
    gone = [k for k in CITED_ON_PURPOSE if not any((w, c) == k for w, _, c in broken)]
    assert not gone, f"no longer cited: {gone}; delete them from CITED_ON_PURPOSE"


def test_the_maps_file_names_exist() -> None:
    """docs/design.md names a file by its path in its room (`math/parsheet.py`): each exists."""
    files = {
        p.relative_to(ROOT).as_posix()
        for d in ("sdk", "rig", "plugins", "native", "tests", "benchmarks", "examples")
        for p in (ROOT / d).rglob("*")
        if p.suffix in (".py", ".c", ".h") and "build" not in p.parts
    }
    missing = sorted(
        {
            m
            for m in MAP_FILE.findall(DESIGN.read_text())
            if not any(f == m or f.endswith("/" + m) for f in files)
        }
    )
    assert not missing, (
        f"docs/design.md names files that do not exist: {missing}; correct their names or "
        "delete their rows"
    )


def rail_in_the_map(text: str, lines: list[str], path: Path) -> bool:
    """Whether docs/design.md names ``path``: by its path (from the root or from its room, in
    backticks), its dotted module name, or its file name in backticks on a line (a table row)
    that names its folder."""
    room = path.relative_to(ROOT).parts[0]
    rel = path.relative_to(ROOT / room)
    names = {f"`{rail_rel(path)}`", f"`{rel.as_posix()}`"}
    if path.suffix == ".py":
        dotted = ".".join((ROOMS[room], *rel.with_suffix("").parts)).removesuffix(".__init__")
        names |= {f"`{dotted}`", f"`{dotted}."}
    if path.name == "__init__.py":
        names |= {f"`{rel.parent.as_posix()}/`", f"`{room}/{rel.parent.as_posix()}/`"}
    if any(n in text for n in names):
        return True
    folder = rel.parent.as_posix()
    return any(
        f"`{path.name}`" in line and (folder == "." or f"{folder}/" in line) for line in lines
    )


def test_the_map_names_every_module_and_c_file() -> None:
    text = DESIGN.read_text()
    lines = text.splitlines()
    c_files = sorted((ROOT / "native" / "src").glob("*.[ch]"))
    c_files += sorted((ROOT / "native" / "include").glob("*.h"))
    missing = [
        rail_rel(p)
        for p in [*rail_modules().values(), *c_files]
        if not rail_in_the_map(text, lines, p)
    ]
    assert not missing, (
        f"modules and C files docs/design.md does not name: {missing}; add a row for each to "
        "its room's table in docs/design.md (its path in backticks, what it holds in one line)"
    )

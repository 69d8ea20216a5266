"""The guard rails' sites on a source tree (issue 38 item 4), counted by the rules of
tests/test_guard_rails.py, with no allow-list applied: so a tree before the rails (an older
checkout) and after can be compared.

    PYTHONPATH=. .venv/bin/python benchmarks/guard_rails_counts.py [ROOT]

ROOT: the root of a feltlab checkout (default: this one). Prints one line a rail. A
measurement, not a test: nothing is asserted.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests import test_guard_rails as rails
from tests.test_layout import typing_only_nodes

HERE = Path(__file__).resolve().parent.parent


def _function_imports_total() -> int:
    """Every function-level import statement, with or without a reason (TYPE_CHECKING aside)."""
    total = 0
    for path in rails.rail_modules().values():
        tree = rails.rail_tree(path)
        typing = typing_only_nodes(tree)
        seen = {
            (n.lineno, n.col_offset)
            for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            for n in ast.walk(f)
            if isinstance(n, ast.Import | ast.ImportFrom) and id(n) not in typing
        }
        total += len(seen)
    return total


def main() -> None:
    rails.ROOT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE
    rails.DESIGN = rails.ROOT / "docs" / "design.md"
    private = rails.rail_private_reaches()
    reexports = rails.rail_reexports()
    no_reason = rails.rail_function_imports()
    lengths = {
        f"{rails.rail_rel(p)}:{name}": n
        for p in rails.rail_c_files()
        for name, n in rails.rail_c_functions(p.read_text()).items()
    }
    long = {k: n for k, n in lengths.items() if n > rails.MAX_C_FUNCTION_LINES}
    broken = rails.rail_broken_citations()
    text = rails.DESIGN.read_text()
    lines = text.splitlines()
    c_files = sorted((rails.ROOT / "native" / "src").glob("*.[ch]"))
    c_files += sorted((rails.ROOT / "native" / "include").glob("*.h"))
    files = [*rails.rail_modules().values(), *c_files]
    unmapped = [p for p in files if not rails.rail_in_the_map(text, lines, p)]
    print(f"tree: {rails.ROOT}")
    print(f"private attributes reached across modules: {sum(private.values())} sites")
    print(f"  {dict(private)}")
    print(f"__all__ names re-exported outside __init__: {len(reexports)} in "
          f"{len({r.split(':')[0] for r in reexports})} modules")  # fmt: skip
    print(f"function-level imports: {_function_imports_total()}, without a valid reason on their "
          f"line: {sum(map(len, no_reason.values()))} in {len(no_reason)} files")  # fmt: skip
    print(f"C functions over {rails.MAX_C_FUNCTION_LINES} lines: {len(long)} {long}")
    print(f"stale citations (paths, feltlab. names) in prose: {len(broken)}")
    print(f"modules and C files the map does not name: {len(unmapped)} of {len(files)}")


if __name__ == "__main__":
    main()

"""cffi build script for the C core: ``feltlab.native._core`` (API mode, out-of-line).

Run by setuptools through ``setup.py``'s ``cffi_modules``.  Source paths are relative to the
project root, where pip runs the build.  Optimisation flags are chosen per compiler;
``-march=native`` is added only when ``FELTLAB_NATIVE_ARCH=1`` is set (never in a wheel meant
for other machines).
"""

from __future__ import annotations

import os
import re
import sysconfig
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def cdef_from_header(text: str) -> str:
    """The cffi declarations of the public header, derived from it so that the two can never
    disagree: comments and preprocessor lines go, integer ``#define``s become ``#define NAME
    ...`` (cffi reads their values from the compiled module)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    out: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            m = re.match(r"#define\s+(\w+)\s+\(?-?(0x[0-9A-Fa-f]+|\d+)u?\)?\s*$", stripped)
            if m:
                out.append(f"#define {m.group(1)} ...")
            continue
        out.append(line)
    return "\n".join(out)


CDEF = cdef_from_header((HERE / "include" / "feltlab_core.h").read_text())

SOURCES = sorted(str(p.relative_to(ROOT)) for p in (HERE / "src").glob("*.c"))


def compile_flags() -> list[str]:
    """Optimisation flags for the compiler Python was built with (gcc and clang alike)."""
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    flags = ["-std=c11", "-O3", "-fno-strict-aliasing", "-Wall", "-Wextra", "-pthread"]
    if "cl.exe" in cc or cc.endswith("cl"):  # MSVC: no __int128, unsupported for now
        raise RuntimeError("feltlab's C core needs gcc or clang (it uses unsigned __int128)")
    if os.environ.get("FELTLAB_NATIVE_ARCH") == "1":
        flags.append("-march=native")
    return flags


FLAGS = compile_flags()
ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "feltlab.native._core",
    '#include "feltlab_core.h"\n',
    sources=SOURCES,
    include_dirs=[str((HERE / "include").relative_to(ROOT))],
    extra_compile_args=FLAGS,
    extra_link_args=["-pthread"],  # the analyzer's up cards side by side (analyzer.c)
    define_macros=[("FL_BUILD_FLAGS", '"' + " ".join(FLAGS) + '"')],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)

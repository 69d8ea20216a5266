"""Build a copy of the C core instrumented with AddressSanitizer and UndefinedBehaviorSanitizer
as the module ``_core_asan`` in a given folder (for the fuzz harness; never installed).

Usage: python native/fuzz/build_asan.py OUTDIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
NATIVE = HERE.parent
sys.path.insert(0, str(NATIVE))
from build_core import CDEF  # noqa: E402

SAN = [
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=undefined",
    "-fno-omit-frame-pointer",
    "-O1",
    "-g",
    "-std=c11",
]


def build(outdir: Path) -> Path:
    """Compile ``_core_asan`` into ``outdir``; returns the path of the extension."""
    ffi = FFI()
    ffi.cdef(CDEF)
    ffi.set_source(
        "_core_asan",
        '#include "feltlab_core.h"\n',
        sources=[str(p) for p in sorted((NATIVE / "src").glob("*.c"))],
        include_dirs=[str(NATIVE / "include")],
        extra_compile_args=SAN,
        extra_link_args=["-fsanitize=address,undefined"],
        define_macros=[("FL_BUILD_FLAGS", '"asan+ubsan"')],
    )
    outdir.mkdir(parents=True, exist_ok=True)
    return Path(ffi.compile(tmpdir=str(outdir), verbose=False))


if __name__ == "__main__":
    print(build(Path(sys.argv[1])))

"""Shared click parameter types of feltlab's commands (core and plugins alike)."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rich.console import Console


class Refused(click.ClickException):
    """A command's refusal of its input or its environment: one line naming the problem and
    the fix, exit 2, feltlab's error code in every command (1 is a verdict where a command
    gives one: FAIL, exploitable; click's own usage errors are 2 as well)."""

    exit_code = 2


def os_error_refused(exc: OSError, scheduler: str | None) -> Refused:
    """The one-line refusal of an OSError out of a simulation run (``simulate``, ``submit``):
    with a Dask scheduler address, the scheduler could not be reached; without one (None or
    ``local``) a file or folder failed, and the message names it, never Dask."""
    if scheduler in (None, "local"):
        return Refused(f"{exc.filename or 'a file'}: {exc.strerror or exc}")
    return Refused(
        f"cannot reach the Dask scheduler {scheduler!r}: {exc}; start one with "
        "`dask scheduler` or use --scheduler local"
    )


class FiniteRange(click.FloatRange):
    """A finite number within ``min..max`` (click's FloatRange arguments): NaN and the
    infinities are refused, naming the option (click's FloatRange lets NaN through, since
    every comparison with it is false, and an infinity through a side with no bound)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(
                f"{value!r} is not a finite number; give one in {self._describe_range()}",
                param,
                ctx,
            )
        return rv


class OutputFile(click.ParamType):  # type: ignore[type-arg]  # generic since click 8.2
    """A file the command will write: its folder must exist and the file must be creatable
    there (tried: a file created for the check is removed again), and the path must not be a
    folder.  With ``suffixes`` (e.g. ``(".png", ".svg", ".pdf")``) the name must end in one of
    them; a name without any suffix gets the first (the command says so when it writes).
    Checked when the command starts, before any work is done."""

    name = "file"

    def __init__(self, suffixes: tuple[str, ...] = ()) -> None:
        self.suffixes = suffixes

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        path = Path(value)
        if self.suffixes:
            allowed = ", ".join(self.suffixes)
            if not path.suffix:
                path = path.with_name(path.name + self.suffixes[0])
            elif path.suffix.lower() not in self.suffixes:
                self.fail(
                    f"{value!r}: cannot write a {path.suffix} file; "
                    f"give a name ending in {allowed}",
                    param,
                    ctx,
                )
        folder = path.parent if str(path.parent) else Path(".")
        if path.is_dir():
            self.fail(f"{value!r} is a folder; give a file name", param, ctx)
        if not folder.is_dir():
            self.fail(f"folder {str(folder)!r} does not exist; create it first", param, ctx)
        if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            self.fail(f"{value!r} is not writable", param, ctx)
        existed = path.exists()
        try:
            with open(path, "a"):
                pass
        except OSError as exc:
            self.fail(
                f"cannot create {str(path)!r} ({exc.strerror}); give a writable path", param, ctx
            )
        if not existed:
            path.unlink(missing_ok=True)
        return path


class OutputFolder(click.ParamType):  # type: ignore[type-arg]  # generic since click 8.2
    """A folder the command will create (or an empty one it will fill): every existing part of
    the path must be a folder, and the folder must be creatable (tried: a folder created for the
    check is removed again).  Checked when the command starts, before any work is done."""

    name = "folder"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        path = Path(value)
        if path.exists() and not path.is_dir():
            self.fail(f"{value!r} is a file; give a new folder", param, ctx)
        if path.is_dir() and any(path.iterdir()):
            self.fail(f"{value!r} is not a new or empty folder; give a new one", param, ctx)
        for parent in path.parents:
            if parent.exists() and not parent.is_dir():
                self.fail(f"{str(parent)!r} is a file, not a folder; give another path", param, ctx)
        made = [p for p in (path, *path.parents) if not p.exists()]
        try:
            path.mkdir(parents=True, exist_ok=True)
            probe = path / ".feltlab-write-check"
            probe.touch()
            probe.unlink()
        except OSError as exc:
            self.fail(f"cannot create {value!r} ({exc.strerror}); give a writable path", param, ctx)
        finally:
            for p in made:  # deepest first
                with contextlib.suppress(OSError):
                    p.rmdir()
        return path


# ---------------------------------------------------------------- shared options and output

U64_MAX = (1 << 64) - 1

_F = TypeVar("_F", bound=Callable[..., Any])


MAX_ROUNDS = 10**12
"""The most rounds any command simulates (``--rounds``): ``feltlab simulate``'s bound, about 55
core-hours of the C simulator at 5 M rounds/s."""


def rounds_option(default: int, help: str, *, least: int = 1) -> Callable[[_F], _F]:
    """The one ``--rounds`` of the commands that simulate (``math``, ``simulate``, ``submit``,
    ``protect``, ``bet-spread``, ``certify csm-audit``): an integer ``least``..
    :data:`MAX_ROUNDS` (``least``: the fewest the command's analysis needs), ``default``
    shown in the help."""
    return click.option(
        "--rounds",
        type=click.IntRange(least, MAX_ROUNDS),
        default=default,
        show_default=True,
        help=help,
    )


def seed_option(default: int | None = None, help: str = "Seed, 0..2**64-1.") -> Callable[[_F], _F]:
    """The one ``--seed`` of every command: an integer 0..2**64-1 (decimal or 0x hex);
    ``default`` None means a fresh seed the command records."""
    return click.option(
        "--seed",
        type=SeedInt(),
        default=default,
        show_default=default is not None,
        help=help,
    )


class SeedInt(click.IntRange):
    """A seed: an integer in 0..2**64-1, decimal or with a 0x/0o/0b prefix."""

    name = "seed"

    def __init__(self) -> None:
        super().__init__(0, U64_MAX)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            try:
                value = int(value.replace("_", ""), 0)
            except ValueError:
                self.fail(f"{value!r} is not an integer (e.g. 7 or 0x2a)", param, ctx)
        return super().convert(value, param, ctx)


def out_option(help: str, *, required: bool = False) -> Callable[[_F], _F]:
    """The one ``--out DIR`` of every command that writes a directory of results."""
    return click.option(
        "--out",
        metavar="DIR",
        default=None,
        required=required,
        help=help,
    )


def json_option(what: str = "the result") -> Callable[[_F], _F]:
    """``--json``: print ``what`` as JSON on stdout instead of a table."""
    return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON.")


#: columns a rich Console uses when stdout is not a terminal: wide enough that no table
#: cell or line is cut or wrapped (a pipe or a file has no width)
PIPE_WIDTH = 10_000


def make_console(*, stderr: bool = False) -> Console:
    """A rich Console for a command's output: the terminal's width on a terminal, and when
    the stream is a pipe or a file a width that cuts nothing and no colour codes."""
    from rich.console import Console  # start-up: rich only for the commands that print with it

    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=PIPE_WIDTH, no_color=True, soft_wrap=True)
    return console


def is_terminal(stream: Any = None) -> bool:
    """True if ``stream`` (default: stderr, where progress bars go) is a terminal."""
    s = stream if stream is not None else sys.stderr
    try:
        return bool(s.isatty())
    except (AttributeError, ValueError):
        return False


#: loggers of the libraries under feltlab: shown only with -v
LIBRARY_LOGGERS = ("can", "isotp", "cantools", "asyncio", "aiohttp", "matplotlib", "distributed")


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler writing to whatever ``sys.stderr`` is when a record is emitted (click's
    test runner and pytest swap it)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class _Format(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        record.short = record.name.removeprefix("feltlab.")
        return super().format(record)


def setup_logging(verbosity: int = 0) -> None:
    """Route every log record (feltlab's and its libraries': python-can, can-isotp,
    cantools) through one stderr handler with feltlab's format.  ``verbosity`` 0: feltlab's
    warnings and errors only, library records hidden; 1 (``-v``): feltlab's info and the
    libraries' warnings; 2 (``-vv``): everything at debug level."""
    root = logging.getLogger()
    for h in list(root.handlers):
        if isinstance(h, _StderrHandler):
            root.removeHandler(h)
    handler = _StderrHandler()
    handler.setFormatter(_Format("feltlab: %(levelname)s %(short)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(
        logging.DEBUG if verbosity >= 2 else logging.INFO if verbosity else logging.WARNING
    )
    logging.getLogger("feltlab").setLevel(
        logging.DEBUG if verbosity >= 2 else logging.INFO if verbosity else logging.WARNING
    )
    lib_level = (
        logging.DEBUG if verbosity >= 2 else logging.WARNING if verbosity else logging.CRITICAL + 1
    )
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(lib_level)
    # Dask's distributed sets its own loggers to INFO when it is imported (later, by
    # `simulate --scheduler`) and in each worker process: its configuration, read from the
    # environment by this process and the workers it starts, says the same level instead
    os.environ["DASK_LOGGING__DISTRIBUTED"] = (
        "debug" if verbosity >= 2 else "warning" if verbosity else "critical"
    )
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").setLevel(
        logging.WARNING if verbosity else logging.CRITICAL + 1
    )

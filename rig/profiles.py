"""The bundled device profiles and how a profile reference resolves: the one place that maps a
name (``batch6``, ``continuous``, ``jackpot``) to its file.  Kept free of heavy imports, so the
command line can list the names in its help."""

from __future__ import annotations

from pathlib import Path

PROFILE_DIR = Path(__file__).parent / "certify" / "profiles"
"""The folder of the bundled profiles (``rig/certify/profiles/<name>.toml``, package data)."""


def bundled_profiles() -> list[str]:
    """The names of the profiles shipped in the package, sorted."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def resolve_profile(ref: str | Path) -> Path:
    """The file of profile ``ref``: the bundled profile of that name when no file of that name
    exists and ``ref`` is a bare name (no suffix, no folder), else ``ref`` itself as a path (a
    missing or malformed file is then refused by the loader, with its own message)."""
    p = Path(ref)
    bundled = PROFILE_DIR / f"{ref}.toml"
    if not p.exists() and not p.suffix and len(p.parts) == 1 and bundled.is_file():
        return bundled
    return p


def shown_profile(path: str | Path | None) -> str:
    """A profile's path as a report shows it: a bundled profile by its name (``bundled
    profile batch6``), never by the absolute path of the installed package (a report showed
    ``/.../build/__editable__.feltlab-0.1.0-.../profiles/batch6.toml``); any other file as
    the campaign was given it; ``built-in default`` for none."""
    if not path:
        return "built-in default"
    p = Path(path)
    bundled = PROFILE_DIR / p.name
    try:  # the same file, however reached (an editable install links each file)
        if p.suffix == ".toml" and bundled.is_file() and bundled.samefile(p):
            return f"bundled profile {p.stem}"
    except OSError:  # gone, or unreadable: shown as given
        pass
    return str(path)


def profile_hint() -> str:
    """The end of a missing-profile message: what a user may give instead."""
    return f"; give a TOML file or a bundled profile name ({', '.join(bundled_profiles())})"

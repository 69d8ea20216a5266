"""The lab's memory of each jackpot panel's freshness value, across sessions (issues 14, 30, 41).

SecOC freshness (AUTOSAR SecOC, docs/protocol.md "Authenticated jackpot results") defeats a
replay only while the receiver remembers the last value it accepted. A host that starts every
session at zero accepts, in the next campaign, a result recorded in an earlier one. So the lab
keeps, per panel key, the last complete freshness value accepted:

- **bound to the key itself**: an entry is found by the key's fingerprint
  (:attr:`feltlab.rig.protocol.secoc.DeviceKey.fingerprint`, a keyed hash of the key
  material), never by its ``key_id`` label or its file's name: the same key under another
  label or file continues from the same value;
- **in two places**: the state file (below) and the key's own **sealed sidecar**,
  ``<key file>.freshness.json`` beside the key file (an HMAC under the key seals the
  fingerprint and the value). The value kept is the higher of the two, so a state in an
  empty folder (a profile's ``freshness_state`` pointed elsewhere), a deleted state and
  counter, or a state written by another lab, never restarts a used key at 0; a state whose
  entry for the key is *lower* than the sidecar's is a state rolled back, refused
  (:class:`SecurityFault`, reason ``tampered``). An inline key (no file) has no sidecar: its
  freshness rests on the state and its counter alone;
- **on disk before it is used**: :meth:`FreshnessStore.remember` writes (fsync) synchronously,
  and the client calls it before a result is returned, so no displayed result is ever ahead
  of the state on disk (:class:`feltlab.rig.clients.JackpotPanelClient`'s ``persist``);
- locations: the state is ``[campaign] freshness_state`` of the profile, else
  ``$FELTLAB_STATE_DIR``, else ``$XDG_STATE_HOME/feltlab``, else ``~/.local/state/feltlab``,
  the file ``freshness.json``; the counter is ``[campaign] freshness_counter``, else
  ``$FELTLAB_FRESHNESS_COUNTER``, else ``freshness.counter.json`` beside the state;
- every update is a read-modify-write under an exclusive lock (``fcntl.flock`` of
  ``<state>.lock``): concurrent campaigns never lose each other's entries;
- written atomically (a temporary file in the same folder, fsync, ``os.replace``);
- the whole state is bound to the counter: each update raises the state's ``counter`` and
  writes the counter file with the state's SHA-256 (two phases: ``pending``, then settled, so
  an update cut by a crash is still recognised). At start (:meth:`FreshnessStore.check`) a
  state older than the counter (a restored copy), a state that is gone while its counter is
  not (deleted), a counter that is gone while its state is not, or a state whose bytes are not
  the counted ones (edited), is a :class:`SecurityFault` naming the file;
- each entry also carries an HMAC-SHA256, under the panel's own key, of the fingerprint and
  the value (an entry lowered by hand is refused even if the counter were rewritten with it);
- monotonic: a value is never lowered; regular files only (a FIFO or device is refused).

What it cannot see: the state, its counter *and* the key's sidecar rolled back together (a
whole-disk restore, a snapshot of every folder), or all three deleted (a used key then looks
new); for an inline key, the state and counter rolled back or deleted together. Keep the key
file (and so its sidecar) and the counter apart from the state, where its writers cannot roll
them back.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from feltlab import inputs
from feltlab.rig.atomic import write_atomic
from feltlab.rig.errors import RigError, SecurityFault
from feltlab.rig.protocol.secoc import DeviceKey

try:  # POSIX; elsewhere the state is written unlocked (one campaign at a time)
    import fcntl
except ImportError:  # pragma: no cover - not on the lab's Linux hosts
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("feltlab.rig.freshness")

STATE_FILE = "freshness.json"
COUNTER_FILE = "freshness.counter.json"
STATE_VERSION = 3
"""Version 2 added the state's ``counter`` (version 1 files, without it, are read once, while no
counter file exists); version 3 keeps each entry under its key's fingerprint (a version 2
entry, under its ``key_id``, is taken as the key's when its HMAC verifies under the key, and
moved under the fingerprint at the next update)."""
SIDECAR_SUFFIX = ".freshness.json"
"""The key's sealed sidecar: ``panel-7.key`` -> ``panel-7.key.freshness.json``."""
MAX_STATE_BYTES = 4 * 1024 * 1024
"""A state or counter file larger than this is refused as damaged (a lab's is a few kB)."""

_COMPROMISED = (
    "the panel's replays can no longer be ruled out: do not restore an older copy (that is "
    "what a replay needs); find out who changed it, then re-key the panel (a new key_id) "
    "and certify it again"
)


_WARNED_NEW: set[tuple[Path, str]] = set()  # (state, fingerprint) warned of as relabelled


def default_state_path() -> Path:
    """``$FELTLAB_STATE_DIR`` / ``$XDG_STATE_HOME/feltlab`` / ``~/.local/state/feltlab``,
    then ``freshness.json``."""
    env = os.environ.get("FELTLAB_STATE_DIR")
    if env:
        return Path(env) / STATE_FILE
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "feltlab" / STATE_FILE


def default_counter_path(state: Path) -> Path:
    """``$FELTLAB_FRESHNESS_COUNTER``, else ``freshness.counter.json`` beside ``state``."""
    env = os.environ.get("FELTLAB_FRESHNESS_COUNTER")
    return Path(env).expanduser() if env else state.with_name(COUNTER_FILE)


def _legacy_tag(key: DeviceKey, label: str, last: int) -> str:
    """A version 2 entry's HMAC (under its ``key_id`` label)."""
    msg = f"feltlab-freshness:v1:{label}:{last}".encode()
    return hmac.new(key.key, msg, hashlib.sha256).hexdigest()


def _tag(key: DeviceKey, last: int, what: str = "state") -> str:
    msg = f"feltlab-freshness:v3:{what}:{key.fingerprint}:{last}".encode()
    return hmac.new(key.key, msg, hashlib.sha256).hexdigest()


def sidecar_path(key: DeviceKey) -> Path | None:
    """Where ``key``'s sealed freshness sidecar is kept (beside its key file), or None for a
    key given inline."""
    return key.path.with_name(key.path.name + SIDECAR_SUFFIX) if key.path is not None else None


def read_regular(path: Path, what: str, limit: int = MAX_STATE_BYTES) -> bytes | None:
    """:func:`feltlab.inputs.read_regular` raising :class:`RigError`."""
    return inputs.read_regular(path, what, limit, error=RigError)


def _dump(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


class FreshnessStore:
    """The state file at ``path`` and its counter at ``counter`` (see the module docstring).

    Raises :class:`RigError` for a file that is not a feltlab freshness state (with its path
    and how to fix it), and :class:`SecurityFault` (reason ``tampered``) for an entry whose
    HMAC does not verify, or a state that does not match its counter (rolled back, deleted,
    edited).
    """

    def __init__(self, path: str | Path | None = None, counter: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_state_path()
        self.counter_path = (
            Path(counter) if counter is not None else default_counter_path(self.path)
        )
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        if self.counter_path.resolve() in (self.path.resolve(), self.lock_path.resolve()):
            raise RigError(
                f"the freshness counter {self.counter_path} is the freshness state's own file: "
                "give freshness_counter (or $FELTLAB_FRESHNESS_COUNTER) another file, best on "
                "another disk or host than the state"
            )

    # -- locking -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        """``flock`` of ``<state>.lock``: exclusive for an update, shared for a read (a
        read needs no lock file while the folder does not exist yet)."""
        if fcntl is None:
            yield
            return
        if exclusive:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_RDWR | os.O_CREAT
        elif self.lock_path.exists():
            flags = os.O_RDONLY
        else:
            yield
            return
        try:
            fd = os.open(self.lock_path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            raise RigError(
                f"freshness state lock {self.lock_path} cannot be opened ({exc.strerror}); "
                "give a writable [campaign] freshness_state"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)  # releases the lock

    # -- reading and verifying -----------------------------------------------------------

    def _parse(self, raw: bytes, what: str, path: Path) -> dict[str, Any]:
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise RigError(
                f"{what} {path} is damaged ({type(exc).__name__}); {_COMPROMISED}"
            ) from exc
        if not isinstance(data, dict):
            raise RigError(f"{path} is not a feltlab {what}")
        return data

    def _counter(self) -> dict[str, Any] | None:
        raw = read_regular(self.counter_path, "freshness counter")
        if raw is None:
            return None
        data = self._parse(raw, "freshness counter", self.counter_path)
        pending = data.get("pending")
        if (
            data.get("version") != 1
            or type(data.get("counter")) is not int
            or not isinstance(data.get("sha256"), str | None)
            or not (pending is None or isinstance(pending, dict))
        ):
            raise RigError(f"{self.counter_path} is not a feltlab freshness counter")
        return data

    def _load(self) -> tuple[dict[str, Any], dict[str, Any] | None, bytes | None]:
        """(state, counter, the state's bytes), verified against each other."""
        raw = read_regular(self.path, "freshness state")
        counter = self._counter()
        if raw is None:
            if counter is not None and counter["counter"] > 0:
                raise SecurityFault(
                    f"freshness state {self.path} is gone while its counter "
                    f"{self.counter_path} stands at update {counter['counter']} (deleted?); "
                    + _COMPROMISED,
                    "tampered",
                )
            return {"version": STATE_VERSION, "counter": 0, "panels": {}}, counter, None
        data = self._parse(raw, "freshness state", self.path)
        version = data.get("version")
        n = data.get("counter", 0 if version == 1 else None)
        if (
            version not in (1, 2, STATE_VERSION)
            or type(n) is not int
            or n < 0
            or not isinstance(data.get("panels"), dict)
        ):
            raise RigError(f"{self.path} is not a feltlab freshness state (version 3)")
        data["counter"] = n
        if counter is None:
            if version != 1 and n > 0:
                raise SecurityFault(
                    f"freshness state {self.path} is at update {n} but its counter "
                    f"{self.counter_path} is gone (deleted, or moved?); " + _COMPROMISED,
                    "tampered",
                )
            return data, None, raw
        if version == 1:
            raise SecurityFault(
                f"freshness state {self.path} is an old (version 1) file while its counter "
                f"{self.counter_path} stands at update {counter['counter']}; " + _COMPROMISED,
                "tampered",
            )
        digest = hashlib.sha256(raw).hexdigest()
        pending = counter.get("pending") or {}
        if (n, digest) in (
            (counter["counter"], counter["sha256"]),
            (pending.get("counter"), pending.get("sha256")),
        ):
            return data, counter, raw
        if n < counter["counter"]:
            problem = (
                f"is at update {n}, older than its counter {self.counter_path} "
                f"(update {counter['counter']}): an older copy was put back"
            )
        else:
            problem = (
                f"is not the state its counter {self.counter_path} recorded (update "
                f"{counter['counter']}): edited outside feltlab"
            )
        raise SecurityFault(f"freshness state {self.path} {problem}; " + _COMPROMISED, "tampered")

    def _entry(self, data: dict[str, Any], key: DeviceKey) -> int:
        """The value the state keeps for ``key``: its entry under the key's fingerprint, and
        any version 2 entry (under a label) whose HMAC verifies under the key."""
        panels = data["panels"]
        fp = key.fingerprint
        last = 0
        entry = panels.get(fp)
        if entry is not None:
            if not isinstance(entry, dict) or type(entry.get("last")) is not int:
                raise RigError(f"freshness state {self.path}: the entry of key {fp} is damaged")
            if not hmac.compare_digest(str(entry.get("hmac", "")), _tag(key, entry["last"])):
                raise SecurityFault(
                    f"freshness state {self.path}: the entry of panel key {key.key_id!r} "
                    f"(fingerprint {fp}) fails its HMAC (edited by hand?); " + _COMPROMISED,
                    "tampered",
                )
            last = int(entry["last"])
        for label, old in panels.items():  # version 2: under a label, the key's if it verifies
            if (
                label != fp
                and isinstance(old, dict)
                and "fingerprint" not in old
                and type(old.get("last")) is int
                and hmac.compare_digest(
                    str(old.get("hmac", "")), _legacy_tag(key, label, old["last"])
                )
            ):
                last = max(last, int(old["last"]))
        return last

    def _sidecar(self, key: DeviceKey) -> int:
        """The value the key's sealed sidecar keeps (0 without one, or one of another key);
        :class:`SecurityFault` for a sidecar of this key whose seal fails."""
        path = sidecar_path(key)
        if path is None:
            return 0
        raw = read_regular(path, "key freshness sidecar")
        if raw is None:
            return 0
        data = self._parse(raw, "key freshness sidecar", path)
        if data.get("fingerprint") != key.fingerprint:
            return 0  # another key's (the key file was replaced): not this key's record
        last = data.get("last")
        if type(last) is not int or not hmac.compare_digest(
            str(data.get("hmac", "")), _tag(key, last, "sidecar")
        ):
            raise SecurityFault(
                f"the freshness sidecar {path} of panel key {key.key_id!r} fails its seal "
                "(edited by hand?); " + _COMPROMISED,
                "tampered",
            )
        return last

    def _kept(self, data: dict[str, Any], key: DeviceKey) -> int:
        """The higher of the state's and the sidecar's values for ``key``; a state entry
        lower than the sidecar is a state rolled back (:class:`SecurityFault`)."""
        in_state = self._entry(data, key)
        in_sidecar = self._sidecar(key)
        if 0 < in_state < in_sidecar:
            raise SecurityFault(
                f"freshness state {self.path} holds {in_state} for panel key {key.key_id!r} "
                f"but the key's own sidecar {sidecar_path(key)} holds {in_sidecar}: the "
                "state was rolled back (an older copy put back), or is an older state than "
                "the one the key was last used with; " + _COMPROMISED,
                "tampered",
            )
        if in_state < in_sidecar:
            log.warning(
                "freshness state %s has no entry for panel key %r (fingerprint %s): "
                "continuing from its sidecar %s (%d)",
                self.path,
                key.key_id,
                key.fingerprint,
                sidecar_path(key),
                in_sidecar,
            )
        return max(in_state, in_sidecar)

    def check(self, key: DeviceKey | None = None) -> int:
        """Verify the state against its counter (and ``key``'s entry); returns the last
        freshness value kept for ``key`` (0 if none or no key). Logs a warning when ``key``
        is given and neither file nor its sidecar exists (a new lab: every panel starts at 0);
        a panel without a key has no freshness to keep, and nothing is said."""
        with self._locked(exclusive=False):
            data, counter, raw = self._load()
            if key is not None and raw is None and counter is None and not self._sidecar(key):
                log.warning(
                    "no freshness state at %s (nor its counter %s): a new one is started, "
                    "every panel at 0",
                    self.path,
                    self.counter_path,
                )
            if key is None:
                return 0
            kept = self._kept(data, key)
            if kept == 0:
                self._warn_relabelled(data, key)
            return kept

    def _warn_relabelled(self, data: dict[str, Any], key: DeviceKey) -> None:
        """Warn when ``key`` is new to the lab but its ``key_id`` was used with another key:
        a wrong key file under a panel's label (its results will fail their MACs), or a
        re-keyed panel (then all is well), named, not taken for an edited state; once per
        process and key."""
        if (self.path, key.fingerprint) in _WARNED_NEW:
            return
        for fp, entry in data["panels"].items():
            if (
                fp != key.fingerprint
                and isinstance(entry, dict)
                and key.key_id in (entry.get("key_ids") or [])
            ):
                log.warning(
                    "panel key %r (fingerprint %s) is new to this lab, but key_id %r was used "
                    "with another key (fingerprint %s, freshness %s): if the panel was not "
                    "re-keyed, this is not its key file (its results will fail their MACs)",
                    key.key_id,
                    key.fingerprint,
                    key.key_id,
                    fp,
                    entry.get("last"),
                )
                _WARNED_NEW.add((self.path, key.fingerprint))
                return

    def last(self, key: DeviceKey) -> int:
        """The last freshness value accepted from the panel of ``key`` (0 if none): the
        higher of the state's and the key's sidecar's."""
        with self._locked(exclusive=False):
            data, _counter, _raw = self._load()
            return self._kept(data, key)

    # -- writing -------------------------------------------------------------------------

    def ensure_writable(self, key: DeviceKey | None = None) -> None:
        """Create the state's and the counter's folders and prove both writable (and the
        folder of ``key``'s sidecar), before any collection. Raises :class:`RigError` naming
        the folder that is not."""
        places = [
            ("state", self.path, "[campaign] freshness_state (or $FELTLAB_STATE_DIR)"),
            (
                "counter",
                self.counter_path,
                "[campaign] freshness_counter (or $FELTLAB_FRESHNESS_COUNTER)",
            ),
        ]
        side = sidecar_path(key) if key is not None else None
        if side is not None:
            places.append(("key sidecar", side, "key file in a folder feltlab can write"))
        for what, path, option in places:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, probe = tempfile.mkstemp(prefix=f".{path.name}-probe-", dir=path.parent)
                os.close(fd)
                os.unlink(probe)
            except OSError as exc:
                raise RigError(
                    f"the freshness {what} {path} cannot be written "
                    f"({exc.strerror or exc}); give a writable {option}"
                ) from exc
        with self._locked(exclusive=True):
            pass

    def remember(self, key: DeviceKey, last: int) -> int:
        """Keep ``last`` for the panel of ``key`` if it is higher than the value kept (never
        lowers it); returns the value now kept. A read-modify-write under the exclusive
        lock; the state and its counter written atomically, in two phases, then the key's
        sidecar; each fsync'ed before this returns."""
        with self._locked(exclusive=True):
            data, _counter, raw = self._load()
            kept = self._kept(data, key)
            if last <= kept:
                return kept
            old_n = int(data["counter"])
            old_sha = hashlib.sha256(raw).hexdigest() if raw is not None else None
            fp = key.fingerprint
            panels = data["panels"]
            labels = set(panels.get(fp, {}).get("key_ids", [])) | {key.key_id}
            for label in [lb for lb in panels if lb != fp and "fingerprint" not in panels[lb]]:
                old = panels[label]  # a version 2 entry of this key: moved under its fingerprint
                if type(old.get("last")) is int and hmac.compare_digest(
                    str(old.get("hmac", "")), _legacy_tag(key, label, old["last"])
                ):
                    labels.add(label)
                    del panels[label]
            data["version"] = STATE_VERSION
            data["counter"] = old_n + 1
            panels[fp] = {
                "fingerprint": fp,
                "key_ids": sorted(labels),
                "last": int(last),
                "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "hmac": _tag(key, int(last)),
            }
            new = _dump(data)
            new_sha = hashlib.sha256(new).hexdigest()
            self._write_counter(old_n, old_sha, {"counter": old_n + 1, "sha256": new_sha})
            write_atomic(self.path, new)
            self._write_counter(old_n + 1, new_sha, None)
            self._write_sidecar(key, int(last))
        return int(last)

    def _write_sidecar(self, key: DeviceKey, last: int) -> None:
        path = sidecar_path(key)
        if path is None:
            return
        seal = {
            "version": 1,
            "fingerprint": key.fingerprint,
            "last": last,
            "hmac": _tag(key, last, "sidecar"),
        }
        try:
            write_atomic(path, _dump(seal))
        except OSError as exc:
            raise RigError(
                f"the freshness sidecar {path} of panel key {key.key_id!r} cannot be written "
                f"({exc.strerror or exc}); keep the key file in a folder feltlab can write"
            ) from exc

    def _write_counter(self, n: int, sha: str | None, pending: dict[str, Any] | None) -> None:
        try:
            self.counter_path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(
                self.counter_path,
                _dump(
                    {
                        "version": 1,
                        "state": str(self.path.resolve()),
                        "counter": n,
                        "sha256": sha,
                        "pending": pending,
                    }
                ),
            )
        except OSError as exc:
            raise RigError(
                f"the freshness counter {self.counter_path} cannot be written "
                f"({exc.strerror or exc}); give a writable [campaign] freshness_counter"
            ) from exc

"""Shoe files: shuffled shoes one a row, as a card reader or ``feltlab shuffle --out`` writes
them, and as ``feltlab certify shuffler --from FILE`` reads them (docs/certification.md,
"Shoes from a file").

Formats, by the file's suffix:

- ``.csv``: one shoe a line, its cards separated by commas (spaces around them ignored);
- ``.jsonl`` (or ``.ndjson``): one shoe a line, a JSON array;
- ``.npy``: a numpy array of shape ``(shoes, cards)``, any integer dtype, the card codes.

A card is written in one of two forms, one per file:

- **card codes** (what a card reader sees: a card's face, not its deck): an integer 0..51
  (``rank * 4 + suit``, docs/design.md) or the card's text, rank then suit (``AS``, ``TD`` or
  ``10D``, ``Q♣``: anything :func:`feltlab.cards.card_code` reads), mixed freely; each code
  appears N times in a shoe of N decks;
- **card ids** (what the C core and a device reporting decks know): integers
  ``deck * 52 + code``, 0..52N-1, each once; ``feltlab shuffle --out`` writes these.

A file whose first shoe holds an integer of 52 or more is of card ids; otherwise of card
codes (for one deck the two are the same).  Blank lines and lines starting with ``#`` are
skipped.  Every row must be a permutation of the same N whole 52-card decks
(1 <= N <= :data:`MAX_DECKS`): the deck count comes from the file's first shoe.  A row
that is not is refused with :class:`ShoeFileError`, one line naming the row (the file's line
number; for ``.npy`` the row index, 1-based) and the problem: an unknown card, a card more
often than N decks hold (or a card id twice), a length that is no whole number of decks, or
a length other than the first row's.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from feltlab.cards import RANKS, SUIT_SYMBOLS, SUITS, card_code, card_str
from feltlab.errors import InputError
from feltlab.inputs import read_regular
from feltlab.rules import MAX_DECKS

FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".npy": "npy"}
"""The shoe file formats by suffix (lower case)."""

MAX_CARDS = 52 * MAX_DECKS
"""The most cards a shoe of a file may hold."""

MAX_FILE_BYTES = 512 << 20
"""The largest shoe file read (bytes): 512 MiB, about 400,000 6-deck shoes as CSV text."""


class ShoeFileError(InputError):
    """A shoe file cannot be read as shoes: its format, or one of its rows (the message names
    the line and the problem)."""


@dataclass(frozen=True)
class ShoeFile:
    """The shoes of a file: ``codes`` ``(shoes, 52 * decks)`` uint8 card codes in dealt order;
    ``ids`` the same shoes' ``uint16`` card ids when the file gives decks (None: card codes
    only); ``format`` ``"csv"``, ``"jsonl"`` or ``"npy"``; ``sha256`` the hex digest of the
    bytes read; ``raw`` those bytes."""

    path: str
    format: str
    sha256: str
    codes: npt.NDArray[np.uint8]
    ids: npt.NDArray[np.uint16] | None
    raw: bytes

    @property
    def cards(self) -> str:
        """``"card ids"`` or ``"card codes"``: the form of the file's cards."""
        return "card ids" if self.ids is not None else "card codes"

    @property
    def decks(self) -> int:
        """Decks in each shoe."""
        return int(self.codes.shape[1]) // 52

    @property
    def shoes(self) -> int:
        """Shoes (rows) in the file."""
        return int(self.codes.shape[0])


def shoe_format(path: str | Path) -> str:
    """The format of a shoe file by its suffix (:data:`FORMATS`).  Raises
    :class:`ShoeFileError` for another suffix."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ShoeFileError(
            f"{path}: a shoe file ends in {', '.join(FORMATS)} (CSV, JSON lines, numpy array)"
        )
    return fmt


def read_shoe_file(
    path: str | Path,
    *,
    limit: int = MAX_FILE_BYTES,
    sha256: str | None = None,
    min_shoes: int = 2,
) -> ShoeFile:
    """The shoes of the shoe file ``path`` (module docstring), read through
    :func:`feltlab.inputs.read_regular` (a regular file of at most ``limit`` bytes).  Raises
    :class:`ShoeFileError` for a missing, unreadable or malformed file, naming the row at
    fault, and for fewer than ``min_shoes`` shoes (the battery's 2; ``certify predict``'s
    1); with ``sha256`` (hex, a campaign's record of the file), for bytes of another
    SHA-256, before any row is read (a changed file is named as changed, whatever its rows)."""
    fmt = shoe_format(path)
    raw = read_regular(path, "shoe file", limit, ShoeFileError)
    if raw is None:
        raise ShoeFileError(f"shoe file {path} does not exist")
    digest = hashlib.sha256(raw).hexdigest()
    if sha256 is not None and digest != sha256:
        raise ShoeFileError(
            f"{path}: its SHA-256 {digest[:16]}... is not the one campaign.json recorded: the "
            "shoes were changed after certification"
        )
    values = _npy_values(path, raw) if fmt == "npy" else _text_values(path, raw, fmt)
    if values.shape[0] < min_shoes:
        raise ShoeFileError(
            f"{path}: {values.shape[0]} shoe(s); the battery needs at least {min_shoes}"
            if min_shoes == 2
            else f"{path}: {values.shape[0]} shoe(s); give at least {min_shoes}"
        )
    codes = np.ascontiguousarray(values % 52, dtype=np.uint8)
    with_decks = values.shape[1] > 52 and int(values[0].max()) >= 52
    ids = np.ascontiguousarray(values, dtype=np.uint16) if with_decks else None
    return ShoeFile(str(path), fmt, digest, codes, ids, raw)


def _text_rows(path: str | Path, raw: bytes, fmt: str) -> Iterable[tuple[int, list[object]]]:
    """(line number, cards as written) of each shoe line of a CSV or JSON-lines file."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ShoeFileError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.count(",") >= MAX_CARDS:  # refused before a huge line is split or parsed
            raise ShoeFileError(
                f"{path} line {number}: wrong length: over {MAX_CARDS} cards, more than "
                f"{MAX_DECKS} decks of 52"
            )
        if fmt == "csv":
            yield number, [f.strip() for f in line.split(",")]
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise ShoeFileError(f"{path} line {number}: not JSON ({exc})") from None
        if not isinstance(row, list):
            raise ShoeFileError(
                f"{path} line {number}: a shoe is a JSON array of cards, got {type(row).__name__}"
            )
        yield number, row


MAX_CARD_TEXT = 24
"""The most characters of a field quoted in an unknown-card error (``"10♠"`` has 3)."""
NPY_MAGIC = b"\x93NUMPY"
"""The first bytes of every ``.npy`` file (numpy's format, ``numpy.lib.format``)."""


def _card(value: object) -> tuple[int, bool]:
    """(the integer of one card as written, whether it was card text); ValueError when it
    is neither a non-negative integer nor card text."""
    if isinstance(value, str) and value.isdigit() and len(value) <= 9:
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9:
        return value, False
    if isinstance(value, str) and len(value) <= MAX_CARD_TEXT:
        return card_code(value), True
    shown = repr(value)  # the error stays one short line, whatever the field holds
    if len(shown) > MAX_CARD_TEXT + 2:
        shown = f"{shown[:MAX_CARD_TEXT]}... ({len(shown):,} characters)"
    raise ValueError(f"{shown} is not a card")


def _names() -> dict[str, tuple[int, bool]]:
    """Every usual way to write a card, upper case, to (its integer, whether it is text):
    the integers below :data:`MAX_CARDS`, and rank then suit (``AS``, ``TS``, ``10S``,
    ``A♠``): :func:`_card`'s answers, looked up instead of parsed."""
    names = {str(i): (i, False) for i in range(MAX_CARDS)}
    for r, rank in enumerate(RANKS):
        for s, suit in enumerate(SUITS):
            for written in {rank, "T" if rank == "10" else rank}:
                names[written + suit] = (r * 4 + s, True)
                names[written + SUIT_SYMBOLS[s]] = (r * 4 + s, True)
    return names


_NAMES = _names()


def _row(cards: list[object]) -> tuple[npt.NDArray[np.int64], bool] | None:
    """(the row's integers, whether any card was text) when every card is written in a usual
    way (:func:`_names`, or an int below :data:`MAX_CARDS`), else None (then :func:`_card`
    reads it card by card and names the one at fault)."""
    values: list[int] = []
    text = False
    for c in cards:
        if type(c) is int and 0 <= c < MAX_CARDS:
            values.append(c)
            continue
        hit = _NAMES.get(c.upper()) if isinstance(c, str) else None
        if hit is None:
            return None
        values.append(hit[0])
        text = text or hit[1]
    return np.array(values, dtype=np.int64), text


@dataclass
class _Form:
    """The first shoe's line, length and form (card ids or codes), every later row's model."""

    line: int
    length: int
    ids: bool


def _text_values(path: str | Path, raw: bytes, fmt: str) -> npt.NDArray[np.int64]:
    rows: list[npt.NDArray[np.int64]] = []
    form: _Form | None = None
    for number, cards in _text_rows(path, raw, fmt):
        where = f"{path} line {number}"
        fast = _row(cards)
        if fast is not None:
            values, text = fast
        else:
            values = np.empty(len(cards), dtype=np.int64)
            text = False
            for i, value in enumerate(cards):
                try:
                    values[i], was_text = _card(value)
                except ValueError as exc:
                    hint = "" if form else " (a shoe file has no header line: start it with #)"
                    why = str(exc)
                    if isinstance(value, str) and len(value) > MAX_CARD_TEXT:
                        # a whole row in one cell (cards separated by ';' or tabs): not the
                        # row's thousand characters, the fix
                        why = (
                            f"{value[:MAX_CARD_TEXT]!r}... ({len(value):,} characters) is not "
                            "one card: separate a row's cards with commas"
                        )
                        hint = ""
                    raise ShoeFileError(
                        f"{where}, card {i + 1}: unknown card: {why}{hint}"
                    ) from None
                text = text or was_text
        form = form or _Form(number, values.size, values.size > 52 and int(values.max()) >= 52)
        if text and form.ids:
            raise ShoeFileError(
                f"{where}: card text (no deck) in a file of card ids (deck * 52 + code, line "
                f"{form.line}): one form per file"
            )
        _check_row(values, where, form)
        rows.append(values.astype(np.uint16))  # checked: every value below MAX_CARDS
    if not rows:
        raise ShoeFileError(f"{path}: no shoes in the file")
    return np.stack(rows).astype(np.int64)


def _npy_header(path: str | Path, raw: bytes) -> None:
    """Check the .npy header's shape and dtype against the file before numpy allocates the
    array: a 128-byte file declaring shape (10^9, 10^9) made ``np.load`` ask for 7 EiB
    (MemoryError), and a long row of int8 was widened to int64 (8 x the file) before its
    length was refused."""
    f = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(f)
    except (ValueError, OSError, EOFError) as exc:
        raise ShoeFileError(f"{path}: not a numpy .npy array ({exc})") from None
    if not np.issubdtype(dtype, np.integer) or len(shape) != 2:
        raise ShoeFileError(
            f"{path}: a shoe array has shape (shoes, cards) and an integer dtype, got shape "
            f"{shape} of {dtype}"
        )
    cards = shape[1]
    if shape[0] and (cards % 52 or not 1 <= cards // 52 <= MAX_DECKS):
        raise ShoeFileError(
            f"{path} row 1: wrong length: {cards} cards is not 1 to {MAX_DECKS} whole decks of 52"
        )
    need = shape[0] * cards * dtype.itemsize
    held = len(raw) - f.tell()
    if need > held:
        raise ShoeFileError(
            f"{path}: the header declares shape {shape} of {dtype} ({need:,} bytes) but the "
            f"file holds {held:,} bytes of data: a damaged or truncated .npy; write it again"
        )


def _npy_values(path: str | Path, raw: bytes) -> npt.NDArray[np.int64]:
    if not raw.startswith(NPY_MAGIC):
        # numpy would take it for a pickle and suggest allow_pickle=True: never for a shoe file
        raise ShoeFileError(
            f"{path}: not a numpy .npy array (it does not start with the .npy magic "
            "b'\\x93NUMPY'): write it with numpy.save, or give a .csv or .jsonl file"
        )
    _npy_header(path, raw)
    try:
        array = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ShoeFileError(f"{path}: not a numpy .npy array ({exc})") from None
    if not np.issubdtype(array.dtype, np.integer) or array.ndim != 2:
        raise ShoeFileError(
            f"{path}: a shoe array has shape (shoes, cards) and an integer dtype, got shape "
            f"{array.shape} of {array.dtype}"
        )
    if array.shape[0] == 0:
        raise ShoeFileError(f"{path}: no shoes in the file")
    values: npt.NDArray[np.int64] = array.astype(np.int64)
    first = values[0]
    form = _Form(1, int(first.size), first.size > 52 and int(first.max()) >= 52)
    for r, row in enumerate(values, 1):
        bad = np.flatnonzero(row < 0)
        if bad.size:
            raise ShoeFileError(
                f"{path} row {r}, card {int(bad[0]) + 1}: unknown card: {int(row[bad[0]])}"
            )
        _check_row(row, f"{path} row {r}", form)
    return values


def _check_row(values: npt.NDArray[np.int64], where: str, form: _Form) -> None:
    """Raise :class:`ShoeFileError` (prefixed ``where``) unless the row ``values`` is a
    permutation of whole decks in the first row's ``form``, and as long as it."""
    if values.size != form.length:
        raise ShoeFileError(
            f"{where}: mixed lengths: {values.size} cards, but the first shoe (line "
            f"{form.line}) has {form.length}; every shoe is a permutation of the same decks"
        )
    decks, rest = divmod(values.size, 52)
    if rest or not 1 <= decks <= MAX_DECKS:
        raise ShoeFileError(
            f"{where}: wrong length: {values.size} cards is not 1 to {MAX_DECKS} whole decks of 52"
        )
    top = values.size if form.ids else 52
    bad = np.flatnonzero(values >= top)
    if bad.size:
        v = int(values[bad[0]])
        what = f"card ids 0..{top - 1}" if form.ids else "card codes 0..51"
        raise ShoeFileError(
            f"{where}, card {int(bad[0]) + 1}: unknown card: {v} (the file's cards are {what})"
        )
    counts = np.bincount(values, minlength=top)
    over = np.flatnonzero(counts > (1 if form.ids else decks))
    if over.size:
        c = int(over[0])
        name = card_str(c, symbols=False)
        name = f"card id {c} ({name} of deck {c // 52})" if form.ids else f"{name} (code {c})"
        hold = (
            "a file of card ids holds each id once a shoe"
            if form.ids
            else f"more than {decks} deck(s) of 52 hold"
        )
        raise ShoeFileError(
            f"{where}: duplicate card: {name} appears {int(counts[c])} times, {hold}"
        )


CARD_FORMS = ("ids", "codes", "text")
"""How :func:`write_shoe_file` writes a card: its id ``deck * 52 + code``, its code, or its
text (``AS``, ``10D``; CSV and JSON lines only)."""


def write_shoe_file(
    path: str | Path, batches: Iterable[npt.ArrayLike], *, decks: int, cards: str = "ids"
) -> int:
    """Write shoes to the shoe file ``path`` in the format of its suffix (CSV, JSON lines,
    ``.npy``), each card as ``cards`` says (:data:`CARD_FORMS`; ``.npy``: uint16 ids or
    uint8 codes).  ``batches``: arrays ``(k, 52 * decks)`` of card ids (codes for one deck).
    Returns the shoes written.  Raises :class:`ShoeFileError` for an unknown suffix or form;
    OSError when the file cannot be written."""
    fmt = shoe_format(path)
    if cards not in CARD_FORMS or (fmt == "npy" and cards == "text"):
        fix = (
            "an .npy array holds integers: give --cards ids or codes, or a .csv or .jsonl file"
            if cards == "text"
            else f"choose one of {', '.join(CARD_FORMS)}"
        )
        raise ShoeFileError(f"cannot write cards as {cards!r} to a {fmt} file: {fix}")
    names = np.array([card_str(c, symbols=False) for c in range(52)], dtype=object)
    written = 0
    if fmt == "npy":
        dtype = np.uint16 if cards == "ids" else np.uint8
        parts = [
            np.asarray(b, dtype=np.int64) % (52 * decks if cards == "ids" else 52) for b in batches
        ]
        array = np.concatenate(parts) if parts else np.empty((0, 52 * decks), np.int64)
        np.save(Path(path), array.astype(dtype), allow_pickle=False)
        return int(array.shape[0])
    with open(path, "w", encoding="utf-8") as f:
        for batch in batches:
            values = np.asarray(batch, dtype=np.int64)
            if cards != "ids":
                values = values % 52
            for row in values:
                if cards == "text":
                    line = ",".join(names[row])
                elif fmt == "csv":
                    line = ",".join(map(str, row.tolist()))
                else:
                    line = json.dumps(row.tolist(), separators=(",", ":"))
                f.write(line + "\n")
            written += int(values.shape[0])
    return written


__all__ = [
    "CARD_FORMS",
    "FORMATS",
    "MAX_CARDS",
    "MAX_FILE_BYTES",
    "ShoeFile",
    "ShoeFileError",
    "read_shoe_file",
    "shoe_format",
    "write_shoe_file",
]

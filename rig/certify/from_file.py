"""Certification of shoes read from a file (``feltlab certify shuffler --from FILE``,
docs/certification.md "Shoes from a file"): the deck orders a machine dealt, whatever its
link, read by a card reader into a CSV, or written by ``feltlab shuffle --out``.

The source replaces collection: the shoes come from :func:`feltlab.shoe_files.read_shoe_file`
(every row checked to be a permutation of the file's N decks), not from a bus and a device.
They then go through the batch campaign's battery, power table, record, report, JUnit and
manifest.  The timing and device checks (shuffle cycle, first card, per card, round trip,
heartbeat, a re-sent shoe) have no device to measure: they are listed as not applicable,
with the reason, never PASS.

A file holds card codes, not decks.  The battery's permutation checks need each card's
position in the loaded order, so the copies of a code are given decks at random: each row's
draw is seeded by SHA-256 of the campaign seed and the row's bytes (:func:`deck_ids`).  For a
uniform shuffle the ids are then exactly a uniform permutation of the loaded cards (a uniform
arrangement of the codes with its copies labelled at random); a row repeated in the file is
the same permutation again (the repeated-shoes check still sees it).  The power table is
computed the same way: each alternative's simulated shoes are reduced to their codes and
labelled by the same draw, so it states the power of the battery on codes, not on the ids a
device reports (lower for multi-deck shoes, where the labels hide which copy moved where).
The loaded order is the fresh shoe, ``native.new_shoe(N)`` (deck by deck, codes 0..51), as
``feltlab shuffle`` and the library's models shuffle from.

Library code: it logs, never prints.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.inputs import read_text_regular
from feltlab.rig.certify import battery
from feltlab.rig.certify.analyze import Analysis, against_standard, guard, power_jobs
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.power import (
    DEFAULT_ALTERNATIVES,
    DEFAULT_REQUIRED,
    DEFAULT_SIMULATED_SHOES,
    POWER_SEED,
    AlternativePower,
    PowerTable,
    RepeatLaw,
    alternative_power,
    judge,
    law_of_shoes,
    shoes_of,
)
from feltlab.rig.certify.profile import (
    CampaignError,
    NoProgress,
    Profile,
    Progress,
    load_profile,
    recorded_profile,
)
from feltlab.rig.certify.record import (
    CampaignResult,
    build_record,
    new_out_dir,
    report_plots,
)
from feltlab.rig.certify.report import write_report
from feltlab.rig.devices.models import ModelKind, parse_model
from feltlab.rig.security.predict import campaign_predictability
from feltlab.seeds import U64_MAX, child_seed
from feltlab.shoe_files import FORMATS, ShoeFile, read_shoe_file

log = logging.getLogger(__name__)

NOT_APPLICABLE = {
    "shuffle_cycle": "the time from SHUFFLE to the shoe ready",
    "first_card": "the latency of a shoe's first card",
    "per_card": "the time per card of a shoe's transfer",
    "round_trip": "a request's round trip to the device",
    "heartbeat": "the device's heartbeat period and jitter",
    "integrity.repeated_shoes_differing": "a shoe number sent again with other cards",
}
"""The device checks of a batch campaign that shoes from a file cannot have: name -> what
it measures."""

SOURCE_NAME = "shoes-source"
"""The copy of the source file kept in the campaign folder: ``shoes-source.<suffix>`` (its
SHA-256 in campaign.json, the record and the manifest)."""

MAX_STATE_BYTES = 1 << 20
"""The largest campaign.json of a from-file campaign read back (a few kB)."""


def deck_ids(codes: npt.NDArray[np.uint8], seed: int) -> npt.NDArray[np.uint16]:
    """Physical ids ``deck * 52 + code`` for ``(shoes, 52 N)`` card ``codes``: in each row
    the N copies of every code get the decks 0..N-1 in a random order.  Each row's order
    comes from sort keys drawn by SplitMix64 (G. Steele, D. Lea and C. Flood, "Fast
    splittable pseudorandom number generators", OOPSLA 2014) from the first 8 bytes of
    SHA-256 of ``seed`` (8 bytes, little-endian) and the row's bytes, so a row repeated in
    the file gets the same ids.  ``(shoes, 52 N)`` uint16."""
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    shoes, n = codes.shape
    key = int(seed).to_bytes(8, "little")
    row_seeds = np.array(
        [
            int.from_bytes(hashlib.sha256(key + row.tobytes()).digest()[:8], "little")
            for row in codes
        ],
        dtype=np.uint64,
    )
    with np.errstate(over="ignore"):
        steps = np.arange(1, n + 1, dtype=np.uint64) * _GOLDEN
        z: npt.NDArray[np.uint64] = np.add(row_seeds[:, None], steps[None, :], dtype=np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    order = np.lexsort((z, codes), axis=-1)  # each code's copies together, in a random order
    slot = np.broadcast_to((np.arange(n) % (n // 52)).astype(np.uint16), (shoes, n))
    deck = np.empty((shoes, n), dtype=np.uint16)
    np.put_along_axis(deck, order, slot, axis=1)
    return (deck * 52 + codes).astype(np.uint16)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
"""SplitMix64's increment (the golden ratio's 64-bit fraction)."""


def _alternative(
    model: str, decks: int, n_shoes: int, *, alpha: float, required: float, shoes: int
) -> AlternativePower:
    """One row of the power table of shoes read as codes: ``shoes`` simulated shoes of
    ``model`` (``child_seed(POWER_SEED, "power", model)``, as a campaign's: never the
    campaign's seed, issue 44), reduced to codes and labelled by :func:`deck_ids` (seeded by
    :data:`~feltlab.rig.certify.power.POWER_SEED` too), then the law and the analytic power at
    ``n_shoes``."""
    seed = POWER_SEED
    n = 52 * decks
    m = parse_model(model)
    period = m.settings["every"] if m.kind == ModelKind.REBOOT else None
    perm = shoes_of("fisher-yates" if period else model, shoes, n, child_seed(seed, "power", model))
    loaded = native.new_shoe(decks, ids=True).astype(np.uint16)
    codes = np.ascontiguousarray(loaded[perm] % 52, dtype=np.uint8)
    relabelled = battery.input_positions(deck_ids(codes, seed), loaded)
    law = law_of_shoes(model, relabelled, codes)
    if period is not None:
        law = replace(law, repeats=RepeatLaw(0, shoes, period))
    return alternative_power(law, n_shoes, alpha=alpha, required=required, codes=True)


def power_table(prof: Profile, decks: int, n_shoes: int, *, alpha: float) -> PowerTable:
    """The battery's power against the profile's named alternatives (``[campaign]
    power_alternatives``, ``power_shoes``, ``power_required``, as a campaign's) on ``n_shoes``
    shoes of ``decks`` decks read as codes (:func:`_alternative`)."""
    alts = list(prof.campaign.get("power_alternatives", DEFAULT_ALTERNATIVES))
    shoes = int(prof.campaign.get("power_shoes", DEFAULT_SIMULATED_SHOES))
    required = float(prof.campaign.get("power_required", DEFAULT_REQUIRED))
    found: list[AlternativePower] = []
    unavailable: dict[str, str] = {}
    for alt in alts:
        try:
            found.append(
                _alternative(alt, decks, n_shoes, alpha=alpha, required=required, shoes=shoes)
            )
        except ValueError as exc:
            unavailable[alt] = str(exc)
    return PowerTable(
        alpha, required, battery.family_size(), shoes, tuple(found), unavailable, codes_only=True
    )


def _ids(source: ShoeFile, seed: int) -> npt.NDArray[np.uint16]:
    """The shoes' card ids: the file's own, else drawn (:func:`deck_ids`)."""
    return source.ids if source.ids is not None else deck_ids(source.codes, seed)


def _power(prof: Profile, source: ShoeFile, *, alpha: float) -> PowerTable:
    """The power table: a campaign's when the file gives card ids (the same jobs,
    :func:`feltlab.rig.certify.analyze.power_jobs`), else of shoes read as codes
    (:func:`power_table`)."""
    if source.ids is None and source.decks > 1:
        return power_table(prof, source.decks, source.shoes, alpha=alpha)
    loaded = native.new_shoe(source.decks, ids=True).astype(np.int64)
    jobs = power_jobs(prof, source.shoes, loaded.size, alpha=alpha, loaded=loaded)
    found, unavailable = [], {}
    for job in jobs:
        try:
            found.append(job.compute())
        except ValueError as exc:
            unavailable[job.model] = str(exc)
    required = float(prof.campaign.get("power_required", DEFAULT_REQUIRED))
    shoes = jobs[0].shoes if jobs else DEFAULT_SIMULATED_SHOES
    return PowerTable(alpha, required, battery.family_size(), shoes, tuple(found), unavailable)


def analyze_shoes(
    source: ShoeFile, prof: Profile, *, alpha: float, seed: int, progress: Progress
) -> Analysis:
    """The battery, its power and plots of the shoes of ``source`` (the file's rows, already
    checked to be permutations of its decks); the device checks are in
    ``detail["not_applicable"]``."""
    a = Analysis()
    a.detail["not_applicable"] = [
        {"name": name, "reason": f"{what}: no device, the shoes were read from a file"}
        for name, what in NOT_APPLICABLE.items()
    ]
    guard(a, "battery", "", _battery, a, source, prof, alpha=alpha, seed=seed, progress=progress)
    if "predictability" in prof.raw:  # the seed search on the file's first shoe (issue 40)
        guard(a, "predictability", "", _predictability, a, source, prof)
    return a


def _predictability(a: Analysis, source: ShoeFile, prof: Profile) -> None:

    a.predictability = campaign_predictability(
        prof.raw["predictability"], source.codes[0], where=f"profile {prof.path or prof.name}"
    )


def _battery(
    a: Analysis, source: ShoeFile, prof: Profile, *, alpha: float, seed: int, progress: Progress
) -> None:
    loaded = native.new_shoe(source.decks, ids=True).astype(np.uint16)
    progress.start("analysing: battery", 1)
    perm = battery.input_positions(_ids(source, seed), loaded)
    stats = native.battery_pass(perm)
    a.plots["position_counts"] = stats.position_counts
    a.plots["rising"] = stats.rising
    a.plots["eulerian"] = battery.eulerian_pmf(perm.shape[1])
    res = battery.run_battery(perm, alpha=alpha, codes=source.codes, loaded_ids=loaded)
    a.battery = res  # kept even if the power below cannot run
    progress.advance()
    progress.start("analysing: power against named alternatives", 1)
    table = _power(prof, source, alpha=alpha)
    progress.advance()
    a.battery = against_standard(judge(res, table), prof, alpha)


def source_record(source: ShoeFile, given: str) -> dict[str, Any]:
    """The record's ``source``: the file as given, its SHA-256, format, shoes and decks."""
    return {
        "type": "file",
        "path": given,
        "sha256": source.sha256,
        "format": source.format,
        "shoes": source.shoes,
        "decks": source.decks,
        "cards": source.cards,
        "deck_labels": "from the file (card ids)"
        if source.ids is not None or source.decks == 1
        else "each code's copies given decks at random, seeded by SHA-256 of the campaign "
        "seed and the row; the power table is of shoes read so (docs/certification.md, "
        "Shoes from a file)",
        "loaded_order": f"native.new_shoe({source.decks}): deck by deck, codes 0..51",
    }


def _record(
    prof: Profile, state: dict[str, Any], analysis: Analysis, source: ShoeFile
) -> dict[str, Any]:
    verdict = analysis.verdict()
    record = build_record(
        prof,
        state,
        analysis,
        [],
        verdict,
        collection={
            "requested": source.shoes,
            "collected": source.shoes,
            "missing_count": 0,
            "complete": True,
            "aborted": False,
            "this_part": None,
            "missing": [],
        },
    )
    src = source_record(source, str(state["source"]["path"]))
    record["source"] = src
    record["device"].update(
        name=f"shoes from {src['path']} ({src['format']} of {source.cards}, {source.shoes} "
        f"shoes of {source.decks} decks)",
        simulated=False,
        model=None,
        base=None,
        bus=f"none: shoes read from a file (sha256 {source.sha256[:16]}...)",
        on_certifying_host=False,
    )
    record["seeds"]["device_parts"] = None
    record["seeds"]["deck_labels"] = state.get("seed")
    record["clock"] = {
        "mode": "none",
        "description": "shoes read from a file: no device and no clock; the timing checks "
        "are not applicable",
    }
    record["not_applicable"] = analysis.detail.get("not_applicable", [])
    record["host_uncertainty"] = {"source": "not applicable", "reason": "no timing measured"}
    return record


def _checked(alpha: float | None, seed: int | None, prof: Profile) -> tuple[float, int]:
    use_alpha = float(alpha if alpha is not None else prof.campaign.get("alpha", 0.01))
    if not 0 < use_alpha < 1:
        raise CampaignError(f"alpha must be in (0, 1), got {use_alpha}")
    if seed is not None and not 0 <= seed <= U64_MAX:
        raise CampaignError(f"the seed must be in 0..{U64_MAX}, got {seed}")
    return use_alpha, int(seed if seed is not None else 0)


def certify_file(
    path: str,
    prof: Profile,
    out: Path,
    *,
    alpha: float | None = None,
    seed: int | None = None,
    progress: Progress | None = None,
) -> CampaignResult:
    """``feltlab certify shuffler --from FILE``: read the shoe file ``path`` (refused, one
    line naming the row, before ``out`` is made), keep a copy of it in the new or empty
    folder ``out`` (:data:`SOURCE_NAME`), then the battery, power and report there as a
    campaign's.  ``seed`` (default 0: a file's result is reproducible) drives the deck
    labels and the power simulations.  Raises :class:`CampaignError` or
    :class:`feltlab.shoe_files.ShoeFileError`."""
    if prof.kind != "batch":
        raise CampaignError(
            f"profile {prof.path} is a {prof.kind} profile: shoes from a file are certified "
            "as a batch shuffler's; give a batch profile (or none)"
        )
    use_alpha, use_seed = _checked(alpha, seed, prof)
    source = read_shoe_file(path)
    new_out_dir(out, "choose a new --out directory")
    suffix = Path(path).suffix.lower()
    (out / f"{SOURCE_NAME}{suffix}").write_bytes(source.raw)
    state: dict[str, Any] = {
        "campaign_id": uuid.uuid4().hex,
        "kind": prof.kind,
        "profile": prof.to_dict(),
        "source": {"path": path, "sha256": source.sha256, "format": source.format},
        "bus": None,
        "model": None,
        "size": source.shoes,
        "alpha": use_alpha,
        "seed": use_seed,
        "faults": None,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "parts": [],
    }
    (out / "campaign.json").write_text(json.dumps(state, indent=2))
    return _report(source, prof, state, out, progress or NoProgress(), write=True)


def _report(
    source: ShoeFile,
    prof: Profile,
    state: dict[str, Any],
    out: Path | None,
    progress: Progress,
    *,
    write: bool,
    offline: bool = False,
) -> CampaignResult:
    analysis = analyze_shoes(
        source, prof, alpha=float(state["alpha"]), seed=int(state["seed"]), progress=progress
    )
    record = _record(prof, state, analysis, source)
    if offline:
        record["analyzed_offline"] = True
    if write and out is not None:
        write_report(out, record, report_plots(analysis))
    return CampaignResult(Verdict(record["verdict"]), record, out or Path("."))


def file_state(directory: Path) -> dict[str, Any] | None:
    """The campaign.json of a from-file campaign in ``directory`` (with its ``source``), or
    None when the folder holds another campaign (or none).  Raises :class:`CampaignError`
    for a from-file campaign.json that is unreadable or lacks a field."""
    try:
        text = read_text_regular(
            directory / "campaign.json", "campaign.json", MAX_STATE_BYTES, error=CampaignError
        )
        state = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        return None  # not one of ours: read_state names the problem
    if not isinstance(state, dict) or not isinstance(state.get("source"), dict):
        return None
    for name in ("profile", "alpha", "seed", "size"):
        if name not in state:
            raise CampaignError(f"{directory}/campaign.json has no {name!r} field")
    return state


def is_file_source(path: Path) -> bool:
    """Whether ``path`` is a shoe file (by its suffix, :data:`feltlab.shoe_files.FORMATS`) or
    the folder of a campaign of shoes from a file (its campaign.json has a ``source``): what
    ``feltlab analyze`` gives to :func:`analyze_file` rather than to the capture analysis."""
    if path.is_dir():
        return (path / "campaign.json").exists() and file_state(path) is not None
    return path.suffix.lower() in FORMATS


def analyze_file(
    path: Path,
    prof: Profile | None,
    *,
    out: Path | None,
    alpha: float | None = None,
    seed: int | None = None,
    progress: Progress | None = None,
) -> CampaignResult:
    """``feltlab analyze`` of a shoe file, or of the folder of a from-file campaign (its
    copy of the file, checked against the SHA-256 campaign.json recorded): the battery run
    again, the report written to ``out`` (new or empty) when given.  ``prof``: default the
    campaign's, else the bundled batch profile."""
    state: dict[str, Any] | None = file_state(path) if path.is_dir() else None
    if path.is_dir():
        if state is None:
            raise CampaignError(f"{path} is not a campaign of shoes from a file")
        copies = sorted(path.glob(f"{SOURCE_NAME}.*"))
        if len(copies) != 1:
            raise CampaignError(f"{path}: no single {SOURCE_NAME}.* copy of the shoe file")
        # the SHA-256 checked before any row: a changed file is named as changed
        source = read_shoe_file(copies[0], sha256=str(state["source"].get("sha256")))
        given = str(state["source"].get("path"))
    else:
        source = read_shoe_file(path)
        given = str(path)
    if prof is None:
        prof = recorded_profile(state, path) if state is not None else load_profile(None, "batch")
    use_alpha, use_seed = _checked(
        alpha if alpha is not None else (state or {}).get("alpha"),
        seed if seed is not None else (state or {}).get("seed"),
        prof,
    )
    st = {
        **(state or {}),
        "kind": prof.kind,
        "source": {"path": given, "sha256": source.sha256, "format": source.format},
        "bus": None,
        "model": None,
        "size": source.shoes,
        "alpha": use_alpha,
        "seed": use_seed,
    }
    if out is not None:
        new_out_dir(out, "choose a new --out directory")
    return _report(
        source, prof, st, out, progress or NoProgress(), write=out is not None, offline=True
    )


__all__ = [
    "NOT_APPLICABLE",
    "SOURCE_NAME",
    "analyze_file",
    "analyze_shoes",
    "certify_file",
    "deck_ids",
    "file_state",
    "is_file_source",
    "power_table",
    "source_record",
]

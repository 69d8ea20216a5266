"""The security pack's predictability check, ``seed.predictable`` (issue 40 item 3,
docs/security.md): the declared factory order LOADed (card ids 0..52 decks - 1, a card's code
its id mod 52, its deck id // 52), one shoe shuffled and read through the declared shoe
report, then the
seed space the target declares (its ``[predictability]`` table) searched in the C core
(:func:`feltlab.rig.security.predict.predictability`), the rest of the shoe predicted, or
the space reported infeasible at the measured rate."""

from __future__ import annotations

import numpy as np

from feltlab.rig.errors import RigError
from feltlab.rig.security.findings import Finding, finding, not_run
from feltlab.rig.security.host import LabHost
from feltlab.rig.security.predict import FAIL, INCONCLUSIVE, evidence, predictability, weaknesses


def seed_check(host: LabHost) -> Finding:
    """``seed.predictable`` of ``host``'s target: NOT_RUN without a declaration (or when
    no seed of the declared space deals the shoe: the declaration is not the device's),
    FAIL when a seed is recovered, PASS when the space is infeasible to search.  The
    finding's figures hold the record (the recovered shoe left out)."""
    decl = host.target.predictability
    if decl is None:
        return not_run(
            "seed.predictable",
            "no generator declared: give the device's [predictability] table (generator, "
            "seed_bits, seed_source, direction, scaling) in its profile",
        )
    ids = np.arange(decl.cards)
    notes = []
    try:
        host.client.load(ids % 52, ids // 52)  # the declaration's factory order
    except RigError as exc:  # e.g. a Status whose card count carries more than the count
        notes.append(f"the LOAD of the factory order was not confirmed ({exc}); searched as sent")
    try:
        host.client.shuffle()
        shoe = host.client.read_shoe()
    except RigError as exc:
        return not_run("seed.predictable", f"no shoe to search: {exc}")
    codes = np.ascontiguousarray(shoe.codes, dtype=np.uint8)
    if codes.size != decl.cards:
        return not_run(
            "seed.predictable",
            f"the device dealt {codes.size} cards but declares {decl.decks} decks "
            f"({decl.cards}): declare decks = {codes.size // 52}",
        )
    rec = predictability(decl, codes)
    lines = evidence(rec)
    lines[1:1] = [f"CWE: {'; '.join(weaknesses(rec))}", *notes]
    if rec.get("recovered"):
        rec["recovered"] = {k: v for k, v in rec["recovered"].items() if k != "shoe"}
    if rec["verdict"] == INCONCLUSIVE:
        return not_run("seed.predictable", "; ".join(lines))
    return finding(
        "seed.predictable",
        rec["verdict"] == FAIL,
        lines,
        shoe_number=shoe.shoe_number,
        record=rec,
    )


__all__ = ["seed_check"]

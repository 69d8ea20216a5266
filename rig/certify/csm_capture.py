"""The continuous shuffler a capture measures: the buffer and machine a finished continuous
campaign's return gaps show, beside the model its profile declares (issue 26, item 4).

A continuous campaign deals a card and returns it at once (INSERT), so each returned card's
*gap* (the deals between its return and its next deal; :mod:`.analyze_continuous`) is at least
the machine's buffer B: a returned card enters the machine only when B later cards have been
returned.  Hence:

- the buffer estimate is the smallest gap, ``B_hat = min(gaps)``.  It never underestimates;
  it overestimates only if no card was dealt at its first chance, which happens with
  probability ``(1 - q) ** n`` for ``n`` gaps and ``q`` the chance of a gap of exactly B under
  the fitted machine (stated with the estimate, ``p_overestimate``);
- the machine: the gap histogram is tested (the exact Monte Carlo test of
  :func:`.analyze_continuous.gap_test`) against the slot machine of ``[device] slots`` and the
  ideal machine (one slot), each with the buffer ``B_hat``; the machine measured is the one
  the test does not reject (both: the declared one stands; neither: none fits).

The return policy (after each round or in batches) is the table's, not the machine's, and a
one-card campaign cannot show it: the declared policy is kept.  A device whose declared buffer
or machine differs from the measured one is named (:attr:`MeasuredModel.differs`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.native import CsmModel
from feltlab.rig.certify.analyze_continuous import gap_test, observed_gaps, simulate_gaps
from feltlab.rig.certify.csm_model import profile_model
from feltlab.rig.certify.decode import read_campaign_capture
from feltlab.rig.certify.profile import CampaignError, Profile, recorded_profile
from feltlab.rig.certify.record import capture_paths, read_state
from feltlab.seeds import child_seed


@dataclass(frozen=True)
class CapturedGaps:
    """A finished continuous campaign's return gaps (int64, shape ``(n,)``), the cards loaded,
    the deals and the campaign's profile."""

    gaps: npt.NDArray[np.int64]
    n_cards: int
    deals: int
    profile: Profile
    directory: str


def read_gaps(directory: Path) -> CapturedGaps:
    """The return gaps of the continuous campaign in ``directory`` (its ``campaign.json`` and
    ``capture-NNN.blf`` parts).  Raises :class:`CampaignError` for a directory that holds no
    continuous campaign, or one whose capture has no returned card dealt again."""
    state = read_state(directory)
    prof = recorded_profile(state, directory)
    if prof.kind != "continuous":
        raise CampaignError(
            f"{directory} holds a {prof.kind} campaign: the CSM audit reads a continuous "
            "shuffler's campaign (feltlab certify shuffler --profile continuous)"
        )
    captures = capture_paths(directory)
    if not captures:
        raise CampaignError(f"no capture-NNN.blf in {directory}")
    data = read_campaign_capture(captures, prof.base)
    gaps, _ = observed_gaps(data.card_events)
    loads = [e for e in data.card_events if e[0] == "load"]
    deals = sum(1 for e in data.card_events if e[0] == "deal")
    if not loads or gaps.size == 0:
        raise CampaignError(
            f"{directory}: no LOAD or no card returned and dealt again in the capture: nothing "
            "to measure (collect more deals)"
        )
    return CapturedGaps(gaps, len(loads[-1][2]), deals, prof, str(directory))


@dataclass(frozen=True)
class MeasuredModel:
    """What a capture measures beside what its profile declares.

    ``buffer``: the smallest gap; ``p_overestimate``: the chance the smallest gap exceeds the
    true buffer (module doc); ``fits``: machine name -> the gap test's p-value with that
    buffer; ``machine``: the machine measured (``"slots"``, ``"ideal"``, or ``"none"`` when
    both are rejected at ``alpha``); ``model``: the model the audit uses (the measured buffer
    and machine, the declared policy; the declared machine when none fits)."""

    declared: CsmModel
    model: CsmModel
    buffer: int
    p_overestimate: float
    machine: str
    fits: dict[str, float]
    n_gaps: int
    alpha: float
    histogram: dict[str, list[float]]

    @property
    def differs(self) -> bool:
        """The declared buffer or machine is not the one measured."""
        wrong_machine = self.machine not in ("none", self.declared.kind) and (
            self.fits[self.declared.kind] <= self.alpha
        )
        return self.buffer != self.declared.buffer or wrong_machine

    def verdict(self, name: str) -> str:
        """One line: the device as declared, or named as differing from its declaration."""
        measured = f"{self.model.describe()} (buffer from the smallest of {self.n_gaps} gaps)"
        if self.machine == "none":
            measured += "; neither machine fits the gaps"
        if self.differs:
            return (
                f"{name} differs from its declared model: declared {self.declared.describe()}, "
                f"measured {measured}"
            )
        return f"{name} behaves as declared: {measured}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "declared": _model_dict(self.declared),
            "measured": _model_dict(self.model),
            "buffer": self.buffer,
            "p_overestimate": self.p_overestimate,
            "machine": self.machine,
            "fits": self.fits,
            "n_gaps": self.n_gaps,
            "alpha": self.alpha,
            "differs": self.differs,
            "histogram": self.histogram,
        }


def _model_dict(m: CsmModel) -> dict[str, Any]:
    return {
        "kind": m.kind,
        "slots": m.slots,
        "buffer": m.buffer,
        "policy": m.policy,
        "batch": m.batch,
        "description": m.describe(),
    }


def measure_model(
    captured: CapturedGaps, *, alpha: float = 0.01, seed: int = 0, replicates: int = 99
) -> MeasuredModel:
    """The buffer and machine ``captured`` measures (module doc), each gap test with
    ``replicates`` Monte Carlo replicates from ``seed``."""
    declared = profile_model(captured.profile.raw, captured.profile.path or "profile")
    gaps = captured.gaps
    b = int(gaps.min())
    fits: dict[str, float] = {}
    tests = {}
    for kind, slots in (("slots", declared.slots), ("ideal", 1)):
        tests[kind] = gap_test(
            gaps,
            n_cards=captured.n_cards,
            slots=slots,
            deals=captured.deals,
            seed=child_seed(seed, "csm-capture", kind),
            replicates=replicates,
            buffer=b,
        )
        fits[kind] = tests[kind].p_value
    passing = [k for k in ("slots", "ideal") if fits[k] > alpha]
    machine = declared.kind if declared.kind in passing else (passing[0] if passing else "none")
    kind = declared.kind if machine == "none" else machine
    slots = declared.slots if kind == "slots" else 1
    pool = np.concatenate(
        [
            simulate_gaps(captured.n_cards, slots, captured.deals, child_seed(seed, "csm-q", i), b)
            for i in range(3)
        ]
    )
    q = float((pool == b).mean()) if pool.size else 0.0
    chosen = tests[kind]
    return MeasuredModel(
        declared=declared,
        model=replace(declared, kind=kind, buffer=b),
        buffer=b,
        p_overestimate=float((1 - q) ** gaps.size),
        machine=machine,
        fits=fits,
        n_gaps=int(gaps.size),
        alpha=alpha,
        histogram={
            "edges": [float(e) for e in chosen.edges],
            "observed": [float(o) for o in chosen.observed],
            "expected": list(chosen.expected),
        },
    )

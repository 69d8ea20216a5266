"""The walk of a campaign's options (issue 38): which modules a small simulated campaign's
options pass through from :func:`~feltlab.rig.certify.campaign.run_campaign` (or
``resume_campaign``), and the campaign module's phases in the order they run.

    .venv/bin/python benchmarks/campaign_walk.py OUTDIR [--resume] [-v]

A *visit* is a call of a feltlab function that receives the campaign's options among its
arguments: a ``CampaignOptions``, a ``Campaign``, or the campaign's state (campaign.json's
dict).  Consecutive calls within one module are one visit; a *return* is a visit to a module
the walk has left before.  Property reads of the options (``opts.simulated``, ``camp.out``)
are data reads, not steps: the "no getters" lines leave them out.  Also printed: how many
times the shared steps ran (the record read, the fault plan built, the options built), and
the campaign module's own functions in call order (its phases).  ``--resume``: the folder of
a finished campaign (run first without it) is resumed with its record removed (every sample
collected: the resume re-analyses).  A measurement, not a test: nothing is asserted.
"""

from __future__ import annotations

import inspect
import json
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from feltlab.rig.certify import campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.profile import load_profile

OPTION_CLASSES = {"CampaignOptions", "Campaign"}
STATE_KEYS = ("campaign_id", "seed", "alpha", "size")
COUNTED = (
    "read_state",
    "campaign_fault_plan",
    "profile_from_dict",
    "check_freshness",
    "capture_paths",
    "count_samples",
    "CampaignOptions",
)


def _is_options(value: Any) -> bool:
    if type(value).__name__ in OPTION_CLASSES:
        return True
    return isinstance(value, dict) and all(k in value for k in STATE_KEYS)


def _is_getter(frame: FrameType) -> bool:
    owner = frame.f_locals.get("self")
    if owner is None:
        return False
    return isinstance(inspect.getattr_static(type(owner), frame.f_code.co_name, None), property)


class Walk:
    """The calls seen while a campaign runs (a ``sys.setprofile`` hook)."""

    def __init__(self) -> None:
        self.visits: dict[str, list[str]] = {"all": [], "no getters": []}
        self.counts: dict[str, int] = {}
        self.phases: list[str] = []

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = str(frame.f_globals.get("__name__", ""))
        if not module.startswith("feltlab"):
            return
        code = frame.f_code
        getter = _is_getter(frame)
        name = code.co_name
        if name == "__init__" and type(frame.f_locals.get("self")).__name__ == "CampaignOptions":
            name = "CampaignOptions"
        if name in COUNTED:
            self.counts[name] = self.counts.get(name, 0) + 1
        if module == campaign.__name__ and name in vars(campaign) and not getter:
            self.phases.append(name)
        args = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if not any(_is_options(frame.f_locals.get(a)) for a in args):
            return
        for key, seen in (("all", True), ("no getters", not getter)):
            seq = self.visits[key]
            if seen and (not seq or seq[-1] != module):
                seq.append(module)

    def summary(self, key: str) -> dict[str, int]:
        seq = self.visits[key]
        left: set[str] = set()
        returns = 0
        for i, module in enumerate(seq):
            if i:
                left.add(seq[i - 1])
            returns += module in left
        return {"modules": len(set(seq)), "visits": len(seq), "returns": returns}


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    resume = "--resume" in argv
    opts = CampaignOptions(load_profile(None, "batch"), out, size=12, seed=3)
    if resume:
        (out / "record.json").unlink()
    walk = Walk()
    threading.setprofile(walk)
    sys.setprofile(walk)
    try:
        if resume:
            campaign.resume_campaign(out)
        else:
            campaign.run_campaign(opts)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    print("calls", json.dumps(dict(sorted(walk.counts.items()))))
    print("campaign.py", " -> ".join(walk.phases))
    for key in walk.visits:
        print(f"options ({key})", json.dumps(walk.summary(key)))
        if "-v" in argv:
            print("\n".join(f"  {m}" for m in walk.visits[key]))


if __name__ == "__main__":
    main(sys.argv[1:])

"""The exact distribution of a round's net result is pinned to the bit (issue 37): a change
that makes the analyzer faster must give the same doubles, summed in the same order.  The
SHA-256 of the split rounds' distribution (``Analysis.split_net``), the unsplit rounds'
(``net_dist``) and the approximated re-split mass (``p_split_dist_approx``), little-endian
float64, computed before the distribution's issue-37 changes (native/src/analyzer_dist.c);
the same for one thread and for one per CPU (the up cards' sums are added in up-card order;
checked on vegas_s17).
A change that alters a figure on purpose raises ``FL_ANALYZER_VERSION`` (feltlab_core.h: the
cached exact figures are then computed again) and pins the new digests here.  Version 2 (issue
41: the all-bust term of a split to 4 hands without a hole card computed in full) changed no
figure of these two rule sets: their digests hold."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from feltlab.math.main_wager import analyze_main
from feltlab.native.analyzer import ANALYZER_VERSION
from feltlab.rules import Rules

PINNED = {  # split to 4 hands (vegas_s17, peek) and to 3 without a hole card (nz)
    "vegas_s17": "0c8a428ea16aa86d517742602ca54a8055e8cace0994629d24a732c0093e77ae",
    "nz": "340aca01895f3dfc0ceafe8af2482595570adb382ef7fe22c5ba95dc21bce202",
}


@pytest.mark.parametrize("preset", sorted(PINNED))
def test_distribution_is_the_same_to_the_bit(preset: str) -> None:
    assert ANALYZER_VERSION == 2, "a new analyzer version pins its own digests here"
    for threads in (1, 0) if preset == "vegas_s17" else (0,):  # nz: 1.3 s an analysis
        a = analyze_main(Rules.preset(preset), split_dist=True, threads=threads)
        raw = a.split_net.astype("<f8").tobytes() + a.net_dist.astype("<f8").tobytes()
        raw += np.float64(a.p_split_dist_approx).astype("<f8").tobytes()
        assert hashlib.sha256(raw).hexdigest() == PINNED[preset], (preset, threads)

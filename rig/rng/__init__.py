"""Raw-output certification of random number generators (issue 39).

:mod:`feltlab.rig.rng.sp800_22` runs NIST SP 800-22 rev 1a's fifteen bitstream tests (188
p-values a sequence at the default parameters) over m sequences of n bits, packed most
significant bit first, and gives the two second-level verdicts of SP 800-22 section 4.2 (the
proportion of passing sequences and the uniformity of the p-values) and a family-wise verdict
over the battery.  The counting runs in the C core (native/src/sp800_22.c); the p-values use
scipy.special.  docs/rng.md describes the tests, their parameters and minimum lengths.
"""

"""Security checks of shufflers and panels (issue 40, docs/security.md): what no statistical
test of the shuffles can see.

- :mod:`~feltlab.rig.security.shuffler`: a seeded shuffler's declaration (generator, seeding,
  shuffle) and the library's shoe of a seed, in Python from the library of generators;
- :mod:`~feltlab.rig.security.predict`: ``feltlab certify predict``'s search of the declared
  seed space in the C core (``native/src/seedsearch.c``) on every core, its record and
  verdict;
- :mod:`~feltlab.rig.security.mt19937`: MT19937's whole state from 624 consecutive outputs.
"""

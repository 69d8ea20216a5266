"""Security checks of shufflers and panels (issue 40, docs/security.md): what no statistical
test of the shuffles can see.

- :mod:`~feltlab.rig.security.shuffler`: a seeded shuffler's declaration (generator, seeding,
  shuffle) and the library's shoe of a seed, in Python from the library of generators;
- :mod:`~feltlab.rig.security.predict`: ``feltlab certify predict``'s search of the declared
  seed space in the C core (``native/src/seedsearch.c``) on every core, its record and
  verdict;
- :mod:`~feltlab.rig.security.mt19937`: MT19937's whole state from 624 consecutive outputs;
- the security pack (``feltlab certify security``; items 2-4): :mod:`.findings` (the checks
  by name, each with its CWE and the Deck Mate 2 finding it re-runs), :mod:`.targets` (the
  device under test: the simulated hardened and flawed devices, or a device on a bus),
  :mod:`.host` (the lab's side of the bus), :mod:`.update` (firmware update path, truncated
  MACs, shared keys), :mod:`.commands` (every DBC command unauthenticated, forged, replayed,
  reordered), :mod:`.leakage` (deck-order leakage: mutual information, a maxT permutation
  test and its power), :mod:`.probe` (undeclared ids and debug requests), :mod:`.pack` (the
  runner) and :mod:`.report` (record, HTML, JUnit).
"""

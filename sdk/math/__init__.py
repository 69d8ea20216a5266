"""The exact mathematics of wagers and play, each module returning data only (printing is
:mod:`feltlab.cli`'s):

- :mod:`feltlab.math.parsheet`: exact PAR sheets of card-decided wagers, by enumerating the
  initial deals (:class:`~feltlab.math.parsheet.ParSheet`).
- :mod:`feltlab.math.main_wager`: the main wager's exact house edge and PAR sheet through the
  C core's combinatorial analyzer.
- :mod:`feltlab.math.play_decided`: PAR sheets of play-decided wagers (exact from rank-level
  facts, else simulated with a confidence interval).
- :mod:`feltlab.math.prizes`: the Madness 21 PAR sheet with a jackpot panel's prize table.
- :mod:`feltlab.math.eor`: effect of removal and the best linear count it implies.
- :mod:`feltlab.math.strategy`: basic strategy for any :class:`feltlab.Rules`.
- :mod:`feltlab.math.strategy_tables`: the same strategy as the C core's tables by total and
  up card, cached; the Python engine's policy that plays them; the simulator's rules.
- :mod:`feltlab.math.indices`: Hi-Lo count indices of the strategy departures (the
  Illustrious 18) from the analyzer on the shoe expected at each true count.
- :mod:`feltlab.math.field_trial`, :mod:`feltlab.math.trial_data`,
  :mod:`feltlab.math.trial_simulation`: a field trial's hold against an exact PAR sheet, its
  CSV, and a simulated trial (docs/trial.md).

Each name is imported from its module (this package re-exports nothing).
"""

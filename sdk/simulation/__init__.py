"""Monte Carlo of whole rounds in the C round simulator, in chunks that scale out:

- :mod:`feltlab.simulation.run`: :func:`~feltlab.simulation.run.simulate`, the chunks' plan and
  the assembly of their exact integer tallies into a
  :class:`~feltlab.simulation.run.SimulationResult` (house edge, side-wager returns).
- :mod:`feltlab.simulation.executors`: where the chunks run, one function per backend (in
  process, threads, local processes, Dask distributed).
- :mod:`feltlab.simulation.chunk`: one chunk: the C simulator's run and its
  :class:`~feltlab.simulation.chunk.Tally`, side bets settled through lookup tables or in
  batches.
- :mod:`feltlab.simulation.check`: a simulation beside the analyzer's exact house edge.
- :mod:`feltlab.simulation.side_tables`: side wagers compiled into lookup tables the C
  simulator indexes.
- :mod:`feltlab.simulation.bet_spread`: a Hi-Lo counter's edge with a bet spread, from the C
  simulator's tallies by true count.

Each name is imported from its module (this package re-exports nothing).
"""

"""The command line's rendering of the SDK's results on the terminal (rich tables) and as
JSON: :mod:`feltlab.cli.render.par_sheets` (``feltlab math``),
:mod:`feltlab.cli.render.main_sheet` (``feltlab math main`` and effects of removal),
:mod:`feltlab.cli.render.simulation` (``feltlab simulate``), :mod:`feltlab.cli.render.playlog`
(``feltlab play``'s round log), :mod:`feltlab.cli.render.trial` (``feltlab trial``'s
report and plot)."""

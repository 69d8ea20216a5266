"""The command line's rendering of the SDK's results, every output format in one place (the
math and simulation modules return data only): on the terminal (rich tables) and as JSON,
CSV or Markdown text: :mod:`feltlab.cli.render.par_sheets` (``feltlab math``),
:mod:`feltlab.cli.render.main_sheet` (``feltlab math main`` and effects of removal),
:mod:`feltlab.cli.render.simulation` (``feltlab simulate``), :mod:`feltlab.cli.render.playlog`
(``feltlab play``'s round log), :mod:`feltlab.cli.render.trial` (``feltlab trial``'s
report and plot), :mod:`feltlab.cli.render.indices` (``feltlab indices``); the one way of
writing a figure (percent, dollars, an estimate with its half-width, pays):
:mod:`feltlab.cli.render.text`."""

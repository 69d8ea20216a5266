"""The rig's presentation, one concept a module: how a figure, a verdict and a test's row
read (:mod:`~feltlab.rig.cli.render.text`), a campaign's HTML report
(:mod:`~feltlab.rig.cli.render.html`), its plots (:mod:`~feltlab.rig.cli.render.plots`), its
JUnit XML (:mod:`~feltlab.rig.cli.render.junit`) and the command line's progress bar and
terminal tables (:mod:`~feltlab.rig.cli.render.terminal`).

Each is a view of a campaign's record (:mod:`feltlab.rig.certify.report`: the versioned JSON
record, the source of truth, and the manifest) or of the samples it was computed from.  The
views below the terminal import only this package, the rig's base and the SDK, so that the
stages writing a campaign (certify, live, explore) may use them (tests/test_layout.py).
"""

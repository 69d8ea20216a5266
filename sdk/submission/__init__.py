"""A vendor's math submission in one command (``feltlab submit``, docs/submission.md).

The certificate of one wager: every paytable it declares, over a grid of deck counts,
dealing (a shoe with its cutting card, or a continuous shuffler) and the dealer's soft-17
rule where play decides the wager (:mod:`feltlab.submission.grid`); each cell's exact PAR
sheet from the existing machinery (:mod:`feltlab.math.parsheet`,
:mod:`feltlab.math.play_decided`) and its countability from game protection
(:mod:`feltlab.simulation.protection`) (:mod:`feltlab.submission.certificate`); every exact
cell confirmed by an independent run of the C round simulator
(:mod:`feltlab.submission.confirmation`); the jurisdictions' forms
(:mod:`feltlab.submission.jurisdictions`); and the documents, HTML, Markdown, JSON and a
manifest, byte for byte reproducible (:mod:`feltlab.submission.documents`).
"""

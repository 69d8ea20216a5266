"""Counted rounds per second (issue 27 item 6): the C simulator's counted tally
(``fl_simulate_counted``: Hi-Lo true count, 31 buckets) with every installed side bet that has
a lookup table, against the uncounted tally of the same rounds and tables
(``fl_simulate_tally``) measured in the same run, alternating: the ratio is the cost of
counting.  Target: 10^8 counted rounds with every installed side bet in under 60 s on one
core (``feltlab protect --all --count hilo --rounds 100000000`` prints its rounds/s).
Nothing is asserted about speed."""

from __future__ import annotations

import time

from feltlab import native
from feltlab.core_rules import simulator_rules
from feltlab.math.counts import BUILTIN
from feltlab.math.strategy_tables import strategy_tables
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.rules import Rules
from feltlab.simulation import side_tables
from feltlab.simulation.protection import bucketing, counted_call, why_not_counted

RULES = Rules.preset("vegas_s17")
ROUNDS = 2_000_000


def _tables() -> tuple[native.SideTable, ...]:
    reg = collect_wagers(get_plugin_manager())
    ws = [reg[n]() for n in reg.names() if n != "main"]
    ws = [w for w in ws if why_not_counted(w, RULES) is None]
    return tuple(t for w in ws if (t := side_tables.side_table(w)) is not None)


def test_counted_against_uncounted_tally() -> None:
    tables = _tables()
    sr = simulator_rules(RULES, strategy_tables(RULES))
    b = bucketing(BUILTIN["hilo"], RULES.decks)
    counted, plain = [], []
    for i in range(5):  # alternating, medians
        t0 = time.perf_counter()
        native.simulate_tally(native.Xoshiro256StarStar(i), sr, ROUNDS, tables)
        plain.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        counted_call(native.Xoshiro256StarStar(i), sr, ROUNDS, tables, b)
        counted.append(time.perf_counter() - t0)
    c, p = sorted(counted)[2], sorted(plain)[2]
    print(
        f"\n{len(tables)} side tables: counted {ROUNDS / c:,.0f} rounds/s, uncounted "
        f"{ROUNDS / p:,.0f} rounds/s: counted/uncounted time {c / p:.2f}x; 10^8 counted rounds "
        f"{1e8 * c / ROUNDS:.0f} s"
    )

"""``feltlab trial``'s report of a field trial (:class:`feltlab.math.field_trial.TrialAnalysis`):
the text summary, Markdown, HTML (jinja2) and the plot of cumulative hold with its 95% bands
(matplotlib, Agg, PNG without metadata: the same trial gives the same bytes)."""

from __future__ import annotations

from pathlib import Path

from feltlab.cli.render.text import amount, percent, percentage_points
from feltlab.intervals import Z95
from feltlab.math.field_trial import POWER, TrialAnalysis

COMAR = "COMAR 36.05.03.25: investigate a hold outside its 95% interval"


def summary_lines(a: TrialAnalysis) -> list[str]:
    """The report's findings, one sentence a line (the text output, the Markdown's and the
    HTML's summary)."""
    first, last = a.points[0].label, a.points[-1].label
    low, high = float(a.edge) - Z95 * a.sd_hold, float(a.edge) + Z95 * a.sd_hold
    rules = f", rules {a.rules}" if a.rules else ""
    with_bets = sum(1 for p in a.points if p.bets)
    verdict = (
        "AGREES with the certified house edge"
        if a.agrees
        else "DISAGREES with the certified house edge (p < 0.05): investigate the game"
    )
    lines = [
        f"{a.title} (paytable {a.paytable}, {a.decks} decks{rules}): certified house edge "
        f"{percent(a.edge, 4)} (exact {a.edge.numerator}/{a.edge.denominator}), standard "
        f"deviation {a.sigma:.4f} per unit",
        f"Trial: {a.bets:,} bets over {len(a.points)} period{'s' if len(a.points) > 1 else ''} "
        f"({first} to {last}), handle "
        f"{amount(a.handle)}, win {amount(a.win)}",
        f"Hold {percent(a.hold, 3)} against {percent(a.edge, 3)} (95% band "
        f"{percent(low, 3)} to {percent(high, 3)}, SD {percent(a.sd_hold, 3)}); "
        f"z = {a.z:+.2f}, p = {a.p_value:.3g}: {verdict}",
        f"Periods outside their 95% band: {len(a.outside)} of {with_bets} (about "
        f"{0.05 * with_bets:.1f} expected by chance)"
        + (f": {', '.join(a.outside)} ({COMAR})" if a.outside else ""),
        f"What it can detect: the smallest house-edge error this trial confirms at "
        f"{POWER:.0%} power (two-sided 95%) is {percentage_points(a.detectable)}; it cannot "
        f"detect a smaller one (a true edge within {percent(float(a.edge) - a.detectable, 3)} to "
        f"{percent(float(a.edge) + a.detectable, 3)} may pass unseen)",
    ]
    if a.tables:
        out = [t for t in a.tables if t.outside]
        lines.insert(
            4,
            f"Tables outside their 95% band over the trial: {len(out)} of {len(a.tables)}"
            + "".join(
                f"{'; ' if i else ': '}{t.table} (hold {percent(t.hold, 2)}, band "
                f"{percent(t.low, 2)} to {percent(t.high, 2)})"
                for i, t in enumerate(out)
            ),
        )
    if a.detect is not None and a.detect_bets is not None and a.detect_power is not None:
        enough = "enough" if a.bets >= a.detect_bets else "not enough"
        lines.append(
            f"To confirm an error of {percentage_points(a.detect)} at {POWER:.0%} power: "
            f"{a.detect_bets:,} bets of one size; this trial has {a.bets:,} ({enough}; its "
            f"power against that error is {a.detect_power:.0%})"
        )
    lines.append(
        "Bands assume each row's bets are of its average size; bets of varied sizes widen the "
        "true band, so a period outside is a reason to look, not proof (docs/trial.md)"
    )
    return lines


PERIOD_COLUMNS = (
    "period",
    "rows",
    "bets",
    "handle",
    "win",
    "hold",
    "95% band",
    "outside",
    "cumulative hold",
    "cumulative band",
)


def period_rows(a: TrialAnalysis) -> list[list[str]]:
    """One row a period for the reports' table (:data:`PERIOD_COLUMNS`)."""
    rows = []
    for p in a.points:
        has = p.bets > 0
        rows.append(
            [
                p.label,
                str(p.rows),
                f"{p.bets:,}",
                amount(p.handle),
                amount(p.win),
                percent(p.hold, 2) if has else "-",
                f"{percent(p.low, 2)} to {percent(p.high, 2)}" if has else "-",
                "yes" if p.outside else "",
                # before the first bet the cumulative figures are NaN, printed as before
                percent(p.cum_hold, 3, missing="nan%"),
                f"{percent(p.cum_low, 3, missing='nan%')} to "
                f"{percent(p.cum_high, 3, missing='nan%')}",
            ]
        )
    return rows


TABLE_COLUMNS = ("table", "days", "bets", "handle", "win", "hold", "95% band", "outside")


def table_rows(a: TrialAnalysis) -> list[list[str]]:
    """One row a table for the reports' second table (:data:`TABLE_COLUMNS`)."""
    return [
        [
            t.table,
            str(t.days),
            f"{t.bets:,}",
            amount(t.handle),
            amount(t.win),
            percent(t.hold, 2) if t.bets else "-",
            f"{percent(t.low, 2)} to {percent(t.high, 2)}" if t.bets else "-",
            "yes" if t.outside else "",
        ]
        for t in a.tables
    ]


def _md_table(columns: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    head = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    return head + ["| " + " | ".join(r) + " |" for r in rows]


def render_markdown(a: TrialAnalysis, plot: str | None = None) -> str:
    """The report as Markdown: the findings, the plot (``plot``: its file name), the
    periods' table and the tables' table."""
    out = [f"# Field trial: {a.title}", ""]
    out += [f"- {line}" for line in summary_lines(a)]
    if plot:
        out += ["", f"![cumulative hold with its 95% bands]({plot})"]
    out += ["", "## Periods", "", *_md_table(PERIOD_COLUMNS, period_rows(a))]
    if a.tables:
        out += ["", "## Tables", "", *_md_table(TABLE_COLUMNS, table_rows(a))]
    return "\n".join(out) + "\n"


HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Field trial: {{ title }}</title>
<style>
body { font-family: sans-serif; max-width: 60em; margin: 2em auto; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
tr.outside td { background: #fde2e2; }
.verdict { font-weight: bold; }
img { max-width: 100%; }
</style></head><body>
<h1>Field trial: {{ title }}</h1>
<ul>{% for line in summary %}
<li{% if loop.index == 3 %} class="verdict"{% endif %}>{{ line }}</li>{% endfor %}
</ul>
{% if plot %}<p><img src="{{ plot }}" alt="cumulative hold with its 95% bands"></p>{% endif %}
{% for heading, columns, rows in tables %}{% if rows %}<h2>{{ heading }}</h2>
<table><thead><tr>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr></thead><tbody>
{% for r in rows %}<tr{% if r[7] %} class="outside"{% endif %}>
{%- for v in r %}<td>{{ v }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table>{% endif %}
{% endfor %}
<p>feltlab trial; docs/trial.md explains the bands, the test and what a trial can detect.</p>
</body></html>
"""


def render_html(a: TrialAnalysis, plot: str | None = None) -> str:
    """The report as one HTML page (jinja2, autoescaped): the findings, the plot (``plot``:
    its file name, beside the page), the periods' and the tables' tables, those outside their
    band shaded."""
    import jinja2  # start-up: jinja2 only for the HTML page

    env = jinja2.Environment(autoescape=True, keep_trailing_newline=True)
    return env.from_string(HTML).render(
        title=a.title,
        summary=summary_lines(a),
        plot=plot,
        tables=[
            ("Periods", PERIOD_COLUMNS, period_rows(a)),
            ("Tables", TABLE_COLUMNS, table_rows(a)),
        ],
    )


def plot_hold(a: TrialAnalysis, path: Path) -> None:
    """Two panels written to ``path`` as PNG with no metadata (no software version, no
    time): above, the cumulative hold (%) against cumulative bets with its 95% band around
    the certified house edge (the vertical scale fits the band from a tenth of the trial on,
    where the early band's width no longer hides the rest); below, each period's hold with its
    own band, the periods outside it in red."""
    from matplotlib.figure import Figure  # start-up: matplotlib only when a plot is asked for

    fig = Figure(figsize=(8, 6.5))
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    pts = [p for p in a.points if p.cum_bets]
    xs = [p.cum_bets for p in pts]
    edge = 100 * float(a.edge)
    top.fill_between(
        xs, [100 * p.cum_low for p in pts], [100 * p.cum_high for p in pts],
        color="#cfe0f3", label="95% band of the cumulative hold",
    )  # fmt: skip
    top.plot(xs, [100 * p.cum_hold for p in pts], color="#1f4e9c", lw=1.5, label="cumulative hold")
    later = [p for p in pts if p.cum_bets >= 0.1 * a.bets] or pts
    reach = max(
        3 * 100 * (later[0].cum_high - float(a.edge)),
        1.2 * max(abs(100 * p.cum_hold - edge) for p in later),
    )
    top.set_ylim(edge - reach, edge + reach)
    top.set_ylabel("cumulative hold (% of handle)")
    top.set_title(f"{a.title}, paytable {a.paytable}, {a.decks} decks", fontsize=9)
    with_bets = [p for p in pts if p.bets]
    bottom.fill_between(
        [p.cum_bets for p in with_bets], [100 * p.low for p in with_bets],
        [100 * p.high for p in with_bets], step="mid", color="#e6e6e6",
        label="95% band of each period",
    )  # fmt: skip
    inside = [(p.cum_bets, 100 * p.hold) for p in with_bets if not p.outside]
    outside = [(p.cum_bets, 100 * p.hold) for p in with_bets if p.outside]
    if inside:
        bottom.scatter(*zip(*inside, strict=True), s=8, color="#555555", label="period hold")
    if outside:
        bottom.scatter(*zip(*outside, strict=True), s=14, color="#c0392b", label="outside its band")
    bottom.set_ylabel("period hold (%)")
    bottom.set_xlabel("cumulative bets")
    for ax in (top, bottom):
        ax.axhline(edge, color="black", lw=0.8, label=f"certified house edge {percent(a.edge, 3)}")
        ax.legend(fontsize=7, loc="upper right" if ax is top else "best")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=90, metadata={"Software": None})

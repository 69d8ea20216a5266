"""A campaign's plots for its HTML report (matplotlib, Agg; base64 PNGs): the shuffler's
position heat map, rising sequences over the Eulerian curve and latency histograms
(:func:`make_plots`), and a raw-output certificate's SP 800-22 plots (:func:`make_rng_plots`).
Drawn from the samples the record was computed from (the record holds their statistics)."""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    # fixed margins (set by each plot): a "tight" bounding box draws every figure twice
    fig.savefig(buf, format="png", dpi=90)
    return base64.b64encode(buf.getvalue()).decode()


def make_plots(
    *,
    position_counts: np.ndarray | None = None,
    rising: np.ndarray | None = None,
    eulerian: np.ndarray | None = None,
    latencies: Mapping[str, Any] | None = None,
) -> list[tuple[str, str]]:
    """Base64 PNG plots for the HTML report: the position heat map, the rising-sequence
    histogram over the Eulerian curve, and one latency histogram per named sample (seconds)."""
    # imported here: matplotlib is the report's alone (the helper process of a campaign has
    # imported it ahead, ahead.py).  Figures, not pyplot: no global figure manager to close,
    # no GUI backend machinery (pyplot's import is 40% of matplotlib's); savefig draws with Agg
    from matplotlib.figure import Figure  # start-up: matplotlib only when the report is drawn

    def subplots(size: tuple[float, float]) -> tuple[Any, Any]:
        fig = Figure(figsize=size)
        return fig, fig.subplots()

    plots: list[tuple[str, str]] = []
    if position_counts is not None:
        fig, ax = subplots((6, 5))
        n_shoes = position_counts.sum(axis=1).max()
        expected = n_shoes / position_counts.shape[0]
        im = ax.imshow(
            position_counts / expected,
            cmap="coolwarm",
            vmin=0,
            vmax=2,
            aspect="auto",
            interpolation="nearest",
        )
        ax.set_xlabel("output position")
        ax.set_ylabel("input position")
        fig.colorbar(im, ax=ax, label="observed / expected")
        fig.subplots_adjust(left=0.12, right=0.98, bottom=0.1, top=0.97)
        plots.append(("Card by position (observed / expected)", _png(fig)))
    if rising is not None and eulerian is not None:
        fig, ax = subplots((6, 3.5))
        n = eulerian.size
        r = np.arange(1, n + 1)
        counts = np.bincount(rising.astype(np.int64), minlength=n + 1)[1:]
        lo = max(1, int(rising.min()) - 5)
        hi = min(n, int(rising.max()) + 5)
        sl = slice(lo - 1, hi)
        ax.bar(r[sl], counts[sl], color="#7aa6d6", label="observed shoes")
        ax.plot(r[sl], eulerian[sl] * rising.size, "k-", label="Eulerian (uniform shuffle)")
        ax.set_xlabel("rising sequences")
        ax.set_ylabel("shoes")
        ax.legend()
        fig.subplots_adjust(left=0.12, right=0.98, bottom=0.15, top=0.96)
        plots.append(("Rising sequences", _png(fig)))
    for name, given in (latencies or {}).items():
        # samples (s), or {"samples", "limits": {label: s}}: the limits judged are drawn too
        limits = given.get("limits") or {} if isinstance(given, Mapping) else {}
        a = np.asarray(given["samples"] if isinstance(given, Mapping) else given, np.float64)
        if a.size == 0:
            continue
        fig, ax = subplots((6, 3))
        ax.hist(a * 1e3, bins=min(50, max(5, a.size // 5)), color="#8fbf8f")
        for (label, limit), style in zip(limits.items(), ("--", ":"), strict=False):
            ax.axvline(float(limit) * 1e3, color="#c0392b", linestyle=style, label=label)
        if limits:
            ax.legend(fontsize="small")
        ax.set_xlabel(f"{name} (ms)")
        ax.set_ylabel("count")
        fig.subplots_adjust(left=0.12, right=0.98, bottom=0.18, top=0.95)
        plots.append((f"Latency: {name}", _png(fig)))
    return plots


def make_rng_plots(
    columns: Sequence[Mapping[str, Any]], tests: Sequence[Mapping[str, Any]], alpha: float
) -> list[tuple[str, str]]:
    """Base64 PNG plots of a raw-output certificate (record ``rng``): the proportion of
    passing sequences of every p-value column against SP 800-22's band (4.2.1), and each
    test's p-values in ten bins against the uniform (4.2.2)."""
    # Figures, not pyplot (as make_plots): pyplot keeps every figure it opens until closed,
    # which a station drawing many certificates would pile up ("more than 20 figures")
    from matplotlib.figure import Figure  # start-up: matplotlib only when the report is drawn

    plots: list[tuple[str, str]] = []
    judged = [c for c in columns if c["sequences"]]
    if judged:
        fig = Figure(figsize=(9, 3.8))
        ax = fig.subplots()
        names = list(dict.fromkeys(c["test"] for c in judged))
        jitter = np.random.default_rng(0)  # spreads a test's columns sideways, nothing else
        for i, name in enumerate(names):
            cs = [c for c in judged if c["test"] == name]
            lo = min(c["band"][0] for c in cs)
            hi = max(c["band"][1] for c in cs)
            ax.fill_between([i - 0.4, i + 0.4], lo, hi, color="#e3e3e3", linewidth=0)
            x = i + (jitter.uniform(-0.3, 0.3, len(cs)) if len(cs) > 1 else np.zeros(1))
            prop = np.array([c["proportion"] for c in cs])
            ok = np.array([c["proportion_ok"] for c in cs])
            ax.plot(x[ok], prop[ok], "o", ms=3, color="#2a7d2a")
            ax.plot(x[~ok], prop[~ok], "o", ms=4, color="#b22222")
        ax.axhline(1 - alpha, color="k", linewidth=0.6)
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=7)
        lowest = min(min(c["proportion"], c["band"][0]) for c in judged)
        ax.set_ylim(max(0.0, lowest - 0.01), 1.002)
        ax.set_ylabel("proportion passing")
        ax.set_title("grey: the band p̂ ± 3 sqrt(p̂(1 - p̂)/m); red: a column outside it", fontsize=8)
        fig.subplots_adjust(left=0.08, right=0.99, bottom=0.36, top=0.93)
        plots.append(("Proportion of passing sequences (SP 800-22 4.2.1)", _png(fig)))
    ran = [t["name"] for t in tests if any(c["test"] == t["name"] for c in judged)]
    if ran:
        cols = 5
        rows = -(-len(ran) // cols)
        fig = Figure(figsize=(10, 1.9 * rows))
        axes = fig.subplots(rows, cols, squeeze=False)
        for ax, name in zip(axes.ravel(), ran, strict=False):
            h = np.sum([c["histogram"] for c in judged if c["test"] == name], axis=0)
            ax.bar(
                np.arange(10) / 10 + 0.05,
                h / max(h.sum(), 1),
                width=0.1,
                color="#7aa6d6",
                edgecolor="white",
            )
            ax.axhline(0.1, color="k", linewidth=0.6)
            ax.set_title(name, fontsize=8)
            ax.set_xticks([0, 0.5, 1])
            ax.tick_params(labelsize=6)
        for ax in axes.ravel()[len(ran) :]:
            ax.axis("off")
        fig.subplots_adjust(left=0.05, right=0.99, bottom=0.08, top=0.92, hspace=0.7)
        plots.append(("P-values of each test (ten bins; uniform: 0.1 each)", _png(fig)))
    return plots

"""The validation report's plotly figures (:func:`figures`) and their captions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis.report import Report
from analysis.scale import report_scales

#: A category with fewer main pairs than this gets no interval in the category plot (its t interval
#: would rest on 0 or 1 degree of freedom); it is drawn as a hollow point marked "too few pairs".
MIN_CATEGORY_PAIRS = 3
RUBRIC_ITEM = "rubric"
RUBRIC_RANGE = 2.0  # rubric alignment is the mean of 0-2 ratings: a difference lies in -2..+2


def difference_range(report: Report, item: str) -> float:
    """The largest chosen - rejected difference `item` can take (its scale's width); for an item that
    is not a quality dimension or the rubric (``""``), the widest quality scale's."""
    if item == RUBRIC_ITEM:
        return RUBRIC_RANGE
    p = report.parameters
    scales = report_scales(p, p.get("quality_items") or [""])
    return scales[item].span if item in scales else max(s.span for s in scales.values())


def _clipped(report: Report, table: pd.DataFrame, column: str, key: str) -> pd.Series:
    """`table[column]` clipped, row by row, to +- the range of the row's item (named in `key`)."""
    limit = table[key].map(lambda item: difference_range(report, str(item))).astype(float)
    return table[column].clip(-limit, limit)


def _interval_bars(estimate: pd.Series, low: pd.Series, high: pd.Series) -> dict[str, Any]:
    return {
        "type": "data",
        "symmetric": False,
        "array": (high - estimate).clip(lower=0),
        "arrayminus": (estimate - low).clip(lower=0),
    }


def axis_range(columns: list[pd.Series], *, low: float, high: float, pad: float = 0.05) -> list[float]:
    """An axis from `low` to `high`, widened to hold every finite value of `columns` (with `pad`)."""
    values = np.concatenate([c.to_numpy(dtype=float) for c in columns]) if columns else np.array([])
    values = values[np.isfinite(values)]
    if values.size:
        low, high = min(low, float(values.min()) - pad), max(high, float(values.max()) + pad)
    return [low, high]


def _quality_ranges(report: Report) -> str:
    """The quality items' possible differences in words: "±4 points on the quality scale", or per item
    when their scales differ ("±4 on correctness, ±1 on safety")."""
    items = report.parameters.get("quality_items") or [""]
    spans = {item: difference_range(report, str(item)) for item in items}
    if len(set(spans.values())) == 1:
        return f"±{next(iter(spans.values())):g} points on the quality scale"
    return ", ".join(f"±{span:g} on {item}" for item, span in spans.items())


def figure_captions(report: Report) -> dict[str, str]:
    """What each figure of :func:`figures` shows, in a sentence or two (under the figure in the app and
    in the HTML report)."""
    p = report.parameters
    level = round(100 * (1 - 2 * p["alpha"]))
    return {
        "forest": (
            f"Mean chosen − rejected rating per quality dimension with its {level}% CI: blue from the "
            "crossed random-effects model (the verdict, for pairs and annotators in general), grey from "
            "the per-pair TOST (this panel of annotators). Equivalence is shown when the whole interval "
            + (
                f"lies inside the green band of ±{p['margin']:g} points."
                if "margins" not in p
                else "lies inside its dimension's green band ("
                + ", ".join(f"±{m:g} on {item}" for item, m in p["margins"].items())
                + ")."
            )
        ),
        "differences": (
            "How many pairs have each mean chosen − rejected difference (averaged over the pair's "
            "annotators), per quality dimension. Zero means both responses were rated alike."
        ),
        "categories": (
            f"Mean chosen − rejected difference per category and item with its {level}% t interval over "
            f"pairs, clipped to the possible range ({_quality_ranges(report)}, ±"
            f"{RUBRIC_RANGE:g} on the rubric). Categories with fewer than {MIN_CATEGORY_PAIRS} pairs "
            "have no interval: they are hollow points marked “too few pairs”. "
            + ("Green band: the equivalence margin." if "margins" not in p else "Each item has its margin.")
        ),
        "preference": (
            "Judgments that preferred the chosen response, called them equal, or preferred the "
            "rejected one (counts of judgments; the title gives the mean per-pair share preferring "
            "chosen, ties counted as half)."
        ),
        "agreement": (
            f"Krippendorff's alpha (ordinal) per item with its {level}% percentile bootstrap CI over "
            f"pairs; dotted lines: the study's reliability threshold ({p['reliability_threshold']:g}) "
            "and 0.667, the usual floor for tentative conclusions (Krippendorff 2004)."
        ),
    }


def figures(report: Report) -> dict[str, Any]:
    """The report's plotly figures: forest plot, differences, categories, preference, agreement.

    Every figure has a title and axis labels; :func:`figure_captions` says what each shows. No interval
    is drawn beyond what the scale allows, and a category with too few pairs for one gets none.
    """
    import plotly.graph_objects as go

    v = report.validation
    margin = report.parameters["margin"]
    level = round(100 * (1 - 2 * report.parameters["alpha"]))
    layout = {"margin": {"l": 10, "r": 10, "t": 60, "b": 10}, "legend": {"orientation": "h", "y": -0.25}}
    forest = go.Figure()
    own = report.parameters.get("margins")
    if own is None:
        forest.add_vrect(x0=-margin, x1=margin, fillcolor="#d3f9d8", opacity=0.6, line_width=0, layer="below")
    for row, (item, m) in enumerate((own or {}).items()):  # a band per dimension, on its row
        forest.add_shape(
            type="rect", x0=-m, x1=m, y0=row - 0.45, y1=row + 0.45, yref="y", fillcolor="#d3f9d8",
            opacity=0.6, line_width=0, layer="below", name=f"margin {item}",
        )  # fmt: skip
    for table, name, color in (
        (v.crossed, f"crossed model, {level}% CI (verdict)", "#3b5bdb"),
        (v.equivalence, f"per-pair TOST, {level}% CI (this panel)", "#868e96"),
    ):
        low, high = (
            _clipped(report, table, "ci_low", "dimension"),
            _clipped(report, table, "ci_high", "dimension"),
        )
        forest.add_trace(
            go.Scatter(
                x=table["estimate"],
                y=table["dimension"],
                mode="markers",
                marker={"size": 10, "color": color},
                error_x=_interval_bars(table["estimate"], low, high),
                name=name,
                offsetgroup=name,
            )
        )
    forest.add_vline(x=0, line_dash="dot")
    forest.update_layout(
        title="Chosen − rejected, by dimension",
        xaxis_title="chosen − rejected (points)",
        yaxis_title="dimension",
        height=360,
        showlegend=True,
        scattermode="group",
        **layout,
    )
    dist = go.Figure()
    columns = list(v.pair_means)
    values = [v.pair_means[c]["diff"].to_numpy(dtype=float) for c in columns]
    finite = np.concatenate([x[np.isfinite(x)] for x in values]) if values else np.array([0.0])
    edges = np.histogram_bin_edges(finite if finite.size else [0.0], bins=25)
    for name, column_values in zip(columns, values, strict=True):  # binned: small for 100k pairs
        counts, _ = np.histogram(column_values[np.isfinite(column_values)], bins=edges)
        dist.add_trace(
            go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, width=np.diff(edges), name=name, opacity=0.6)
        )
    dist.update_layout(
        barmode="overlay",
        title="Per-pair differences",
        height=360,
        xaxis_title="pair mean, chosen − rejected (points)",
        yaxis_title="pairs",
        **layout,
    )
    categories = _category_figure(report, go, level, margin)
    pref = v.preference.iloc[0]
    preference = go.Figure(
        go.Bar(
            x=["chosen", "tie", "rejected"],
            y=[pref["n_chosen"], pref["n_ties"], pref["n_rejected"]],
            marker_color=["#2f9e44", "#adb5bd", "#e03131"],
        )
    )
    preference.update_layout(
        title=f"Preferred response (share {pref['rate']:.2f})",
        xaxis_title="preferred response",
        yaxis_title="judgments",
        height=340,
        **layout,
    )
    ag = report.agreement
    agreement = go.Figure(
        go.Scatter(
            x=ag["krippendorff_alpha"],
            y=ag["item"],
            mode="markers",
            marker={"size": 11},
            error_x=_interval_bars(
                ag["krippendorff_alpha"],
                ag["krippendorff_alpha_ci_low"].clip(-1, 1),
                ag["krippendorff_alpha_ci_high"].clip(-1, 1),
            ),
        )
    )
    threshold = report.parameters["reliability_threshold"]
    agreement.add_vline(x=threshold, line_dash="dot", annotation_text=f"threshold {threshold:g}")
    agreement.add_vline(x=0.667, line_dash="dot", annotation_text="0.667")
    agreement.update_layout(
        title=f"Agreement, {level}% CI",
        xaxis_title="Krippendorff's alpha (1 perfect, 0 chance)",
        yaxis_title="item",
        height=340,
        xaxis_range=axis_range(
            [ag["krippendorff_alpha"], ag["krippendorff_alpha_ci_low"].clip(-1, 1)], low=-0.2, high=1
        ),
        **layout,
    )
    return {
        "forest": forest,
        "differences": dist,
        "categories": categories,
        "preference": preference,
        "agreement": agreement,
    }


def _category_figure(report: Report, go: Any, level: int, margin: float) -> Any:
    """Per category and item: the mean difference, its interval clipped to the possible range, and a
    hollow "too few pairs" point (no interval) where a category has fewer than MIN_CATEGORY_PAIRS."""
    cat = report.categories
    figure = go.Figure()
    if cat.empty:
        figure.update_layout(title="By category: no categories", height=200)
        return figure
    counts = cat.groupby("category", sort=False)["n_pairs"].max()
    names = {
        c: f"{c} (n={int(n)}{', too few pairs' if n < MIN_CATEGORY_PAIRS else ''})" for c, n in counts.items()
    }
    for item, g in cat.groupby("item", sort=False):
        limit = difference_range(report, str(item))
        enough = g[g["n_pairs"] >= MIN_CATEGORY_PAIRS]
        few = g[g["n_pairs"] < MIN_CATEGORY_PAIRS]
        trace = go.Scatter(
            x=enough["estimate"],
            y=enough["category"].map(names),
            mode="markers",
            name=str(item),
            legendgroup=str(item),
            offsetgroup=str(item),
            error_x=_interval_bars(
                enough["estimate"],
                enough["ci_low"].clip(-limit, limit),
                enough["ci_high"].clip(-limit, limit),
            ),
        )
        figure.add_trace(trace)
        if not few.empty:
            figure.add_trace(
                go.Scatter(
                    x=few["estimate"],
                    y=few["category"].map(names),
                    mode="markers",
                    marker={"symbol": "circle-open", "size": 9},
                    name=f"{item} (too few pairs: no interval)",
                    legendgroup=str(item),
                    offsetgroup=str(item),
                )
            )
    if "margins" not in report.parameters:  # items with their own margins share no band
        figure.add_vrect(x0=-margin, x1=margin, fillcolor="#d3f9d8", opacity=0.4, line_width=0, layer="below")
    width = difference_range(report, "")
    figure.update_layout(
        title=f"By category, {level}% CI",
        xaxis_title="chosen − rejected (points)",
        yaxis_title="category (pairs)",
        xaxis_range=[-width - 0.2, width + 0.2],
        height=max(340, 40 * cat["category"].nunique() + 160),
        scattermode="group",
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        legend={"orientation": "h", "y": -0.12},
    )
    return figure

"""The validation report's figures (:func:`figures`, matplotlib), drawn as SVG (:func:`svg_figures`) for
the Validation page and the HTML report, and their captions.

Static SVG rather than an interactive chart library: the browser draws it at once (no multi-megabyte
chart module to load on a page's first visit), the HTML report stays small and opens offline, and the
same figure goes into a paper as it is. Text from the study (dimension, item and category names) is
drawn as plain text: no math or LaTeX markup is interpreted."""

from __future__ import annotations

import io
import textwrap
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

from analysis.report import Report
from analysis.scale import report_scales
from analysis.vocabulary import RUBRIC_SPAN

#: A category with fewer main pairs than this gets no interval in the category plot (its t interval
#: would rest on 0 or 1 degree of freedom); it is drawn as a hollow point marked "too few pairs".
MIN_CATEGORY_PAIRS = 3
RUBRIC_ITEM = "rubric"


def difference_range(report: Report, item: str) -> float:
    """The largest chosen - rejected difference `item` can take (its scale's width); for an item that
    is not a quality dimension or the rubric (``""``), the widest quality scale's."""
    if item == RUBRIC_ITEM:
        return RUBRIC_SPAN
    p = report.parameters
    scales = report_scales(p, p.get("quality_items") or [""])
    return scales[item].span if item in scales else max(s.span for s in scales.values())


def _clipped(report: Report, table: pd.DataFrame, column: str, key: str) -> pd.Series:
    """`table[column]` clipped, row by row, to +- the range of the row's item (named in `key`)."""
    limit = table[key].map(lambda item: difference_range(report, str(item))).astype(float)
    return table[column].clip(-limit, limit)


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
            f"{RUBRIC_SPAN:g} on the rubric). Categories with fewer than {MIN_CATEGORY_PAIRS} pairs "
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


#: The drawing settings every figure is made and saved with, whatever a local matplotlibrc says: study
#: text is never parsed as math or sent to LaTeX, and glyphs are drawn as paths (the SVG looks the same
#: in every browser).
_STYLE: dict[str, Any] = {
    "text.usetex": False,
    "text.parse_math": False,
    "svg.fonttype": "path",
    "svg.hashsalt": "pair-studio",
    "font.family": "DejaVu Sans",
    "font.size": 11,
    "axes.titlesize": 12.5,
    "axes.titlelocation": "left",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.axisbelow": True,
    "grid.color": "#e9ecef",
    "legend.frameon": False,
    "legend.fontsize": 10,
}
_drawing = threading.Lock()  # matplotlib's settings are global: one figure is made or saved at a time
BAND = "#d3f9d8"
CROSSED = "#3b5bdb"
PANEL = "#868e96"
WIDE = 5.8  # inches: a figure across the page (narrow enough that a phone shrinks its text little)


@contextmanager
def _style() -> Iterator[None]:
    import matplotlib  # when a figure is drawn: a page showing stored figures never imports it

    with _drawing, matplotlib.rc_context(_STYLE):  # type: ignore[arg-type]
        yield


def _axes(title: str, xlabel: str, ylabel: str, *, height: float, width: float = WIDE) -> Any:
    """A new figure's one axes, with its title and axis labels."""
    from matplotlib.figure import Figure

    ax = Figure(figsize=(width, height), layout="constrained").add_subplot()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return ax


def _rows(ax: Any, labels: list[str]) -> dict[str, int]:
    """One row per label on the y axis, the first on top; each label's row."""
    ax.set_yticks(range(len(labels)), labels)
    if labels:
        ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.grid(axis="x")
    return {label: row for row, label in enumerate(labels)}


def _intervals(
    ax: Any, rows: np.ndarray, estimate: pd.Series, low: pd.Series, high: pd.Series, **style: Any
) -> None:
    """Points at `estimate` on `rows`, each with its interval from `low` to `high`."""
    below = (estimate - low).clip(lower=0).to_numpy(dtype=float)
    above = (high - estimate).clip(lower=0).to_numpy(dtype=float)
    ax.errorbar(
        estimate.to_numpy(dtype=float), rows, xerr=np.vstack([below, above]), fmt="o", capsize=3,
        elinewidth=1.5, **style,
    )  # fmt: skip


def _label(text: str, width: int = 24, lines: int = 3) -> str:
    """`text` wrapped at `width` characters, cut short (with "…") past `lines` lines."""
    wrapped = textwrap.wrap(text, width) or [""]
    if len(wrapped) > lines:
        wrapped = [*wrapped[: lines - 1], wrapped[lines - 1][: width - 1] + "…"]
    return "\n".join(wrapped)


def _offsets(n: int, spread: float = 0.3) -> np.ndarray:
    """Where `n` series sit within a row (side by side, centred)."""
    return np.linspace(-spread / 2, spread / 2, n) if n > 1 else np.zeros(1)


def _legend_below(ax: Any, columns: int = 2, handles: list[Any] | None = None) -> None:
    """The figure's legend under its axes (the labelled artists, or `handles`), `columns` wide at most."""
    handles = handles if handles is not None else ax.get_legend_handles_labels()[0]
    if handles:
        ax.figure.legend(handles=handles, loc="outside lower center", ncols=min(columns, len(handles)))


def figures(report: Report) -> dict[str, Any]:
    """The report's figures (matplotlib): forest plot, differences, categories, preference, agreement.

    Every figure has a title and axis labels; :func:`figure_captions` says what each shows. No interval
    is drawn beyond what the scale allows, and a category with too few pairs for one gets none.
    """
    with _style():
        return {
            "forest": _forest(report),
            "differences": _differences(report),
            "categories": _categories(report),
            "preference": _preference(report),
            "agreement": _agreement(report),
        }


def as_svg(figure: Any) -> str:
    """`figure` as an SVG document (no date in it: the same figure gives the same text)."""
    buffer = io.StringIO()
    with _style(), warnings.catch_warnings():
        # a label with a character the font lacks is drawn as a box, not warned about on stderr
        warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def svg_figures(report: Report) -> dict[str, str]:
    """:func:`figures` as SVG documents, by name."""
    return {name: as_svg(figure) for name, figure in figures(report).items()}


def _level(report: Report) -> int:
    return round(100 * (1 - 2 * report.parameters["alpha"]))


def _forest(report: Report) -> Any:
    """Per quality dimension: the crossed model's and the per-pair TOST's estimate and interval, on the
    margin's band (one band, or one per dimension on its row)."""
    v, level = report.validation, _level(report)
    dimensions = list(dict.fromkeys([*v.crossed["dimension"], *v.equivalence["dimension"]]))
    ax = _axes(
        "Chosen − rejected, by dimension", "chosen − rejected (points)", "dimension",
        height=1.9 + 0.5 * len(dimensions),
    )  # fmt: skip
    rows = _rows(ax, [str(d) for d in dimensions])
    own = report.parameters.get("margins")
    if own is None:
        margin = report.parameters["margin"]
        ax.axvspan(-margin, margin, color=BAND, alpha=0.8, lw=0, label=f"margin ±{margin:g}")
    for item, m in (own or {}).items():  # a band per dimension, on its row
        row = rows.get(str(item))
        if row is not None:
            ax.fill_betweenx(
                [row - 0.45, row + 0.45], -m, m, color=BAND, alpha=0.8, lw=0, gid=f"margin {item}"
            )
    for (table, name, color), offset in zip(
        (
            (v.crossed, f"crossed model, {level}% CI (verdict)", CROSSED),
            (v.equivalence, f"per-pair TOST, {level}% CI (this panel)", PANEL),
        ),
        _offsets(2),
        strict=True,
    ):
        where = table["dimension"].astype(str).map(rows).to_numpy(dtype=float) + offset
        low, high = (
            _clipped(report, table, "ci_low", "dimension"),
            _clipped(report, table, "ci_high", "dimension"),
        )
        _intervals(ax, where, table["estimate"], low, high, color=color, label=name)
    ax.axvline(0, color="#495057", linestyle=":", linewidth=1)
    _legend_below(ax)
    return ax.figure


def _differences(report: Report) -> Any:
    """Per quality dimension, how many pairs have each mean difference (bins shared by all dimensions)."""
    v = report.validation
    ax = _axes("Per-pair differences", "pair mean, chosen − rejected (points)", "pairs", height=3.6)
    ax.grid(axis="y")
    columns = list(v.pair_means)
    values = [v.pair_means[c]["diff"].to_numpy(dtype=float) for c in columns]
    finite = np.concatenate([x[np.isfinite(x)] for x in values]) if values else np.array([0.0])
    edges = np.histogram_bin_edges(finite if finite.size else [0.0], bins=25)
    for name, column_values in zip(columns, values, strict=True):  # binned: small for 100k pairs
        counts, _ = np.histogram(column_values[np.isfinite(column_values)], bins=edges)
        ax.bar(edges[:-1], counts, width=np.diff(edges), align="edge", alpha=0.6, label=str(name))
    _legend_below(ax, 4)
    return ax.figure


def _preference(report: Report) -> Any:
    """Judgments preferring chosen, tied, preferring rejected (counts written on the bars)."""
    pref = report.validation.preference.iloc[0]
    ax = _axes(
        f"Preferred response (share {pref['rate']:.2f})", "preferred response", "judgments",
        height=3.4, width=WIDE / 2 + 0.5,
    )  # fmt: skip
    ax.grid(axis="y")
    counts = [float(pref["n_chosen"]), float(pref["n_ties"]), float(pref["n_rejected"])]
    bars = ax.bar(["chosen", "tie", "rejected"], counts, color=["#2f9e44", "#adb5bd", "#e03131"])
    ax.bar_label(bars, labels=[f"{c:,.0f}" for c in counts], padding=2)
    ax.margins(y=0.12)
    return ax.figure


def _agreement(report: Report) -> Any:
    """Krippendorff's alpha per item with its interval, beside the study's threshold and 0.667."""
    ag, level = report.agreement, _level(report)
    ax = _axes(
        f"Agreement, {level}% CI", "Krippendorff's alpha\n(1 perfect, 0 chance)", "item",
        height=1.9 + 0.4 * len(ag), width=WIDE / 2 + 0.5,
    )  # fmt: skip
    rows = _rows(ax, [str(item) for item in ag["item"]])
    low, high = ag["krippendorff_alpha_ci_low"].clip(-1, 1), ag["krippendorff_alpha_ci_high"].clip(-1, 1)
    where = ag["item"].astype(str).map(rows).to_numpy(dtype=float)
    _intervals(ax, where, ag["krippendorff_alpha"], low, high, color=CROSSED)
    threshold = report.parameters["reliability_threshold"]
    ax.axvline(threshold, color="#e03131", linestyle=":", linewidth=1.2, label=f"threshold {threshold:g}")
    ax.axvline(0.667, color="#495057", linestyle="--", linewidth=1, label="0.667")
    ax.set_xlim(axis_range([ag["krippendorff_alpha"], low], low=-0.2, high=1))
    _legend_below(ax)
    return ax.figure


def _categories(report: Report) -> Any:
    """Per category and item: the mean difference, its interval clipped to the possible range, and a
    hollow "too few pairs" point (no interval) where a category has fewer than MIN_CATEGORY_PAIRS."""
    from matplotlib.lines import Line2D

    cat, level = report.categories, _level(report)
    if cat.empty:
        ax = _axes("By category: no categories", "chosen − rejected (points)", "category", height=1.6)
        ax.set_yticks([])
        return ax.figure
    counts = cat.groupby("category", sort=False)["n_pairs"].max()
    names = {
        c: f"{c} (n={int(n)}{', too few pairs' if n < MIN_CATEGORY_PAIRS else ''})" for c, n in counts.items()
    }
    ax = _axes(
        f"By category, {level}% CI", "chosen − rejected (points)", "category (pairs)",
        height=max(3.4, 0.55 * len(names) + 2.0),
    )  # fmt: skip
    _rows(ax, [_label(name) for name in names.values()])
    row_of = {category: row for row, category in enumerate(names)}
    legend = []
    if "margins" not in report.parameters:  # items with their own margins share no band
        margin = report.parameters["margin"]
        legend.append(ax.axvspan(-margin, margin, color=BAND, alpha=0.6, lw=0, label=f"margin ±{margin:g}"))
    groups = list(cat.groupby("item", sort=False))
    colors = [f"C{i % 10}" for i in range(len(groups))]  # matplotlib's default cycle
    for (item, g), offset, color in zip(groups, _offsets(len(groups)), colors, strict=True):
        limit = difference_range(report, str(item))
        enough = g[g["n_pairs"] >= MIN_CATEGORY_PAIRS]
        few = g[g["n_pairs"] < MIN_CATEGORY_PAIRS]
        where = enough["category"].map(row_of).to_numpy(dtype=float) + offset
        low, high = enough["ci_low"].clip(-limit, limit), enough["ci_high"].clip(-limit, limit)
        _intervals(ax, where, enough["estimate"], low, high, color=color, gid=f"item {item}")
        ax.plot(
            few["estimate"].to_numpy(dtype=float), few["category"].map(row_of).to_numpy(dtype=float) + offset,
            "o", markerfacecolor="none", color=color, gid=f"too few pairs {item}",
        )  # fmt: skip
        legend.append(Line2D([], [], marker="o", linestyle="", color=color, label=str(item)))
    if (cat["n_pairs"] < MIN_CATEGORY_PAIRS).any():
        label = "too few pairs: no interval"
        legend.append(
            Line2D([], [], marker="o", linestyle="", markerfacecolor="none", color=PANEL, label=label)
        )
    _legend_below(ax, 3, legend)
    width = difference_range(report, "")
    ax.set_xlim(-width - 0.2, width + 0.2)
    return ax.figure

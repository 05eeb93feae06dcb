"""Charts drawn with ECharts (Streamlit's `st.echarts_chart`): the Progress page's judgments over time,
which changes with every visit. Its browser code (1.2 MB) is a quarter of plotly's; the Progress page
draws it only once its expander is opened, so the page where a researcher lands after logging in loads
no chart module at all."""

from typing import Any

import pandas as pd


def timeline_chart(running: pd.DataFrame) -> dict[str, Any]:
    """The judgments-over-time chart (an ECharts option): one line per annotator of its running count
    (:func:`annotator.review.study_progress.cumulative_judgments`), times shown in UTC, whole numbers
    on the y axis. Annotator names are drawn by ECharts as plain text."""
    source = running.assign(submitted_at=running["submitted_at"].dt.tz_localize("UTC"))
    names = sorted(source["annotator"].unique())
    per_annotator = [
        {"transform": {"type": "filter", "config": {"dimension": "annotator", "=": name}}} for name in names
    ]
    return {
        "useUTC": True,
        "title": {"text": "Judgments over time"},
        "legend": {"top": 28, "type": "scroll"},
        "tooltip": {"trigger": "axis"},
        "grid": {"top": 72, "left": 56, "right": 24, "bottom": 56},
        "dataset": [{"source": source}, *per_annotator],
        "xAxis": {"type": "time", "name": "submitted (UTC)", "nameLocation": "middle", "nameGap": 28},
        "yAxis": {
            "type": "value",
            "name": "judgments so far",
            "nameLocation": "middle",
            "nameGap": 40,
            "minInterval": 1,
        },
        "series": [
            {
                "type": "line",
                "name": name,
                "datasetIndex": index,
                "encode": {"x": "submitted_at", "y": "judgments"},
            }
            for index, name in enumerate(names, start=1)
        ],
    }

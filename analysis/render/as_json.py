"""The validation report as JSON: :func:`to_json`, :func:`json_text` and the schema both follow
(:data:`REPORT_SCHEMA`)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from analysis.judges import ALT_TEST_COLUMNS
from analysis.owners import OWNER_ENDORSEMENT
from analysis.render.text import methods_paragraph
from analysis.report import Report
from analysis.verdicts import OVERALL, STATUSES, VERDICT_KEYS


def json_ready(value: Any) -> Any:
    """JSON-ready: NaN/inf become None, NumPy scalars become Python numbers."""
    if isinstance(value, _Records):
        return value
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value


class _Records(list[dict[str, Any]]):
    """Table rows that are JSON-ready already (:func:`json_ready` passes them through)."""


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A table's rows, JSON-ready (what :func:`json_ready` makes of each row, by columns)."""
    frame = df.copy()
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_datetime64_any_dtype(column):
            frame[name] = [None if pd.isna(t) else t.isoformat() for t in column]
        elif pd.api.types.is_float_dtype(column):
            values = column.to_numpy(dtype=float)
            frame[name] = pd.Series(values.tolist(), index=frame.index, dtype=object).where(
                np.isfinite(values), None
            )
        elif column.isna().any():  # e.g. a string column's missing values (NaN in pandas' str dtype)
            frame[name] = column.astype(object).where(column.notna(), None)
    rows = _rows(frame)
    needs_cleaning = any(pd.api.types.is_object_dtype(df[name]) for name in df.columns)
    return _Records(json_ready(row) for row in rows) if needs_cleaning else _Records(rows)


def _rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """``frame.to_dict(orient="records")``, from one list per column when every column is NumPy,
    object or text data (``tolist`` gives the Python values that ``to_dict`` boxes one at a time)."""
    names = list(frame.columns)
    plain = all(
        (isinstance(dtype, np.dtype) and dtype.kind in "biufO") or isinstance(dtype, pd.StringDtype)
        for dtype in frame.dtypes
    )
    if not plain or len(set(names)) != len(names):
        return frame.to_dict(orient="records")
    columns = [frame[name].to_numpy().tolist() for name in names]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def json_text(report: Report) -> str:
    """The report as JSON text: one line per top-level key, and a table one row per line. The
    standard library's C encoder writes each line (``indent`` would use its Python encoder: 4 s for
    a 20,000-pair report)."""
    lines = []
    encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode  # one encoder for every row
    for key, value in to_json(report).items():
        if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
            rows = ",\n".join(f"    {encode(row)}" for row in value)
            text = f"[\n{rows}\n  ]"
        else:
            text = encode(value)
        lines.append(f"  {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def to_json(report: Report) -> dict[str, Any]:
    """Every number of the report as plain JSON data (see :data:`REPORT_SCHEMA`).

    The agreement coefficient is ``krippendorff_alpha``; ``parameters.alpha`` is the significance
    level.
    """
    v = report.validation
    return json_ready(
        {
            "study": report.study,
            "overall": report.overall,
            "overall_reason": report.overall_reason,
            "parameters": report.parameters,
            "summary": report.summary,
            "verdicts": [verdict.to_dict() for verdict in report.verdicts],
            "equivalence_crossed": _records(v.crossed),
            "equivalence": _records(v.equivalence),
            "intersection_union": v.iut.to_dict(),
            "intersection_union_panel": v.iut_panel.to_dict(),
            "rubric_superiority": _records(v.superiority),
            "rubric_crossed": _records(v.rubric_crossed),
            "preference_crossed": _records(v.preference_crossed),
            "broken_share": _records(v.broken),
            "cleaning": _records(report.cleaning),
            "allocation": _records(report.allocation),
            "preference": _records(v.preference)[0],
            "preference_judgments": _records(v.preference_judgments)[0],
            "holm": _records(v.holm),
            "agreement": _records(report.agreement),
            "annotator_design": _records(report.design),
            "bias": _records(report.bias),
            "categories": _records(report.categories),
            "controls": _records(report.controls),
            "annotator_diagnostics": _records(report.diagnostics),
            "failed_pairs": _records(report.failed_pairs),
            "not_computed": dict(report.not_computed),
            "methods": methods_paragraph(report),
            "quality": None
            if report.quality is None
            else {"exclusion": report.quality.exclusion}
            | {name: _records(df) for name, df in report.quality.tables().items()},
            **_judges_json(report),
            **_prediction_powered_json(report),
            **_owners_json(report),
            "benchmark": None
            if report.benchmark is None
            else {"pairs_used": report.benchmark.pairs_used}
            | {name: _records(df) for name, df in report.benchmark.tables().items()},
        }
    )


def _owners_json(report: Report) -> dict[str, Any]:
    """The ``owners`` key, only when the study has owner judgments (without owners the JSON is unchanged)."""
    section = report.owners
    if section is None:
        return {}
    tables = {"endorsement": section.endorsement, "agreement": section.agreement}
    tables |= {"rubric": section.rubric, "models": section.models, "alt_test": section.alt_test}
    return {"owners": {"parameters": section.parameters} | {k: _records(df) for k, df in tables.items()}}


def _prediction_powered_json(report: Report) -> dict[str, Any]:
    """The ``prediction_powered`` keys, only when a judge covers pairs beyond the people's (otherwise the
    JSON is unchanged)."""
    section = report.prediction_powered
    if section is None:
        return {}
    return {name: _records(table) for name, table in section.tables().items()}


def _judges_json(report: Report) -> dict[str, Any]:
    """The LLM-judges keys: ``judges`` (one row per judge and item), ``judge_tests``, ``judge_cards``."""
    section = report.judges
    if section is None:
        return {"judges": [], "judge_tests": [], "judge_cards": []}
    return {name: _records(table) for name, table in section.tables().items()}


_NUMBER = {"type": ["number", "null"]}


def _table_schema(
    required: list[str], *, min_items: int = 0, properties: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The schema of a table: an array (of at least `min_items`) of objects with the `required` keys
    (and these `properties`)."""
    rows: dict[str, Any] = {"type": "object", "required": required}
    if properties is not None:
        rows["properties"] = properties
    return {"type": "array"} | ({"minItems": min_items} if min_items else {}) | {"items": rows}


REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": [
        "study",
        "overall",
        "overall_reason",
        "parameters",
        "summary",
        "verdicts",
        "equivalence_crossed",
        "equivalence",
        "intersection_union",
        "rubric_superiority",
        "preference",
        "agreement",
        "annotator_diagnostics",
        "failed_pairs",
    ],
    "properties": {
        "study": {"type": "string"},
        "overall": {"enum": list(OVERALL)},
        "overall_reason": {"type": "string"},
        "parameters": {
            "type": "object",
            "required": [
                "margin",
                "alpha",
                "quality_items",
                "n_boot",
                "seed",
                "reliability_threshold",
                "min_pairs",
            ],
        },
        "summary": {"type": "object", "required": ["n_pairs", "n_annotators", "n_judgments"]},
        "verdicts": _table_schema(
            ["key", "claim", "test", "status", "passed", "detail"],
            properties={
                "key": {"enum": [*VERDICT_KEYS, OWNER_ENDORSEMENT]},
                "status": {"enum": list(STATUSES)},
                "passed": {"type": "boolean"},
                "claim": {"type": "string"},
            },
        ),
        "equivalence_crossed": _table_schema(
            ["dimension", "estimate", "se", "df", "ci_low", "ci_high", "pvalue", "equivalent"], min_items=1
        ),
        "equivalence": _table_schema(
            ["dimension", "estimate", "ci_low", "ci_high", "low", "high", "p_value", "equivalent"],
            min_items=1,
            properties={
                "dimension": {"type": "string"},
                "estimate": _NUMBER,
                "ci_low": _NUMBER,
                "ci_high": _NUMBER,
                "low": {"type": "number"},
                "high": {"type": "number"},
                "p_value": _NUMBER,
                "equivalent": {"type": "boolean"},
            },
        ),
        "intersection_union": {"type": "object", "required": ["equivalent", "pvalue"]},
        "rubric_superiority": {"type": "array"},
        "preference": {"type": "object", "required": ["rate", "ci_low", "ci_high", "p_greater", "n_pairs"]},
        "agreement": _table_schema(
            ["item", *(f"krippendorff_alpha{end}" for end in ("", "_ci_low", "_ci_high")), "ci_covers"]
        ),
        "annotator_diagnostics": _table_schema(["annotator"]),
        "failed_pairs": _table_schema(["pair_id", "reasons"]),
        "judges": _table_schema(
            ["judge", "item", "n_pairs", *ALT_TEST_COLUMNS[1:], "baseline", "baseline_advantage", "margin"]
            + ["beats_baseline", "can_replace"],
            properties={
                "can_replace": {"type": ["boolean", "null"]},
                "passes_alt_test": {"type": ["boolean", "null"]},
                "beats_baseline": {"type": "boolean"},
                "epsilon_too_loose": {"type": ["boolean", "null"]},
            },
        ),
    },
}

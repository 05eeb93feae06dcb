"""Study settings as a form edits them: a study config from a base (the defaults or an uploaded
study.toml) and the form's values, validated by :func:`annotator.study.parse_config` (the loader of
`annotator import --config`, so the same error lines), and a registered config as readable rows."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from annotator.study import StudyConfig, load_config, parse_config

FORM_SOURCE = "study settings"
LABEL_SEPARATOR = " | "  # one text cell holds the labels of a scale, in order


def upload_config(data: bytes, name: str, folder: Path) -> StudyConfig:
    """An uploaded study.toml read by the CLI's loader; errors name the upload, not the temp file."""
    path = folder / "study.toml"
    path.write_bytes(data)
    try:
        return load_config(path)
    except Exception as exc:
        exc.args = tuple(str(a).replace(str(path), name) for a in exc.args)
        raise


def dimensions_frame(config: StudyConfig) -> pd.DataFrame:
    """The quality dimensions as an editable table: name, question, labels (joined by " | ")."""
    return pd.DataFrame(
        [
            {"name": d.name, "question": d.question, "labels": LABEL_SEPARATOR.join(d.labels)}
            for d in config.quality.dimensions
        ],
        columns=["name", "question", "labels"],
    )


def training_frame(config: StudyConfig) -> pd.DataFrame:
    """The training items as an editable table: question, options (joined), answer (1-based), explanation."""
    return pd.DataFrame(
        [
            {
                "question": t.question,
                "options": LABEL_SEPARATOR.join(t.options),
                "answer": t.answer + 1,
                "explanation": t.explanation,
            }
            for t in config.training.items
        ],
        columns=["question", "options", "answer", "explanation"],
    )


def _split(text: Any) -> list[str]:
    return [part.strip() for part in str(text or "").split("|") if part.strip()]


def _rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of an edited table, without the empty ones; missing cells as None."""
    rows = []
    for row in frame.to_dict(orient="records"):
        row = {k: (None if v is None or (isinstance(v, float) and v != v) else v) for k, v in row.items()}
        if any(v not in (None, "") for v in row.values()):
            rows.append(row)
    return rows


def build_config(
    base: StudyConfig,
    *,
    dimensions: pd.DataFrame,
    training: pd.DataFrame,
    sections: Mapping[str, Mapping[str, Any]],
) -> StudyConfig:
    """`base` with the form's values: the dimensions and training tables and, per section
    (analysis, controls, training, crowd, exclusion, ...), the keys the form sets. Raises ConfigError
    with one line per problem ("study settings: <key>: <message>"), as the CLI's loader does. A
    dimension keeps its own scale and margin (set in study.toml; the table does not show them) while
    its name stays."""
    data = base.model_dump()
    own = {d["name"]: d for d in data["quality"]["dimensions"]}
    data["quality"]["dimensions"] = [
        {
            "name": str(r.get("name") or "").strip(),
            "question": r.get("question") or "",
            "labels": _split(r.get("labels")),
        }
        | {
            key: value
            for key, value in own.get(str(r.get("name") or "").strip(), {}).items()
            if key in ("scale_min", "scale_max", "margin")
        }
        for r in _rows(dimensions)
    ]
    items = []
    for r in _rows(training):
        answer = r.get("answer")
        items.append(
            {
                "question": r.get("question") or "",
                "options": _split(r.get("options")),
                "answer": int(answer) - 1 if isinstance(answer, int | float) else -1,
                "explanation": r.get("explanation") or "",
            }
        )
    data["training"]["items"] = items
    for section, values in sections.items():
        data.setdefault(section, {}).update(values)
    return parse_config(data, source=FORM_SOURCE)


def settings_rows(config: StudyConfig) -> pd.DataFrame:
    """Every setting of a config as a row: section, setting, value (lists and tables in words)."""
    rows = []

    def add(section: str, key: str, value: Any) -> None:
        if isinstance(value, dict):
            for sub, inner in value.items():
                add(section, f"{key}.{sub}" if key else sub, inner)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            for number, inner in enumerate(value, start=1):
                add(section, f"{key} {number}", inner)
        else:
            text = LABEL_SEPARATOR.join(map(str, value)) if isinstance(value, list) else value
            rows.append({"section": section, "setting": key, "value": "" if text is None else str(text)})

    for section, values in config.model_dump().items():
        add(section, "", values)
    return pd.DataFrame(rows, columns=["section", "setting", "value"])

"""The alternative annotator test gives the published results on the paper's own data.

Calderon, Reichart & Dror (ACL 2025), github.com/nitaytech/AltTest at commit 18428b1f: the notebook
``alt_test_example.ipynb``, cell "Example (paper's data)", reports per data set and LLM judge the winning
rate and the advantage probability (two decimals) with at least 2 annotators per instance, 30 instances
per annotator and Benjamini-Yekutieli at 0.05. The data are read from ``../shared/data/alttest/``
beside the repository (never copied into it); ``ALTTEST_DATA`` points elsewhere. Without the folder
the test is skipped and says why.
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from analysis.judges import alt_test

pytestmark = pytest.mark.nodb

#: data set -> (scoring, epsilon, {judge: (winning rate, advantage probability)}), as published.
PUBLISHED: dict[str, tuple[str, float, dict[str, tuple[float, float]]]] = {
    "mtbench": (
        "accuracy",
        0.2,
        {
            "gemini_flash": (0.00, 0.72),
            "gemini_pro": (0.00, 0.76),
            "gpt-4o": (0.00, 0.77),
            "llama-31": (0.00, 0.69),
            "gpt-4o-mini": (0.00, 0.74),
            "mistral-v03": (0.00, 0.68),
        },
    ),
    "wax": (
        "accuracy",
        0.1,
        {
            "gemini_flash": (0.38, 0.69),
            "gemini_pro": (0.50, 0.74),
            "gpt-4o": (0.50, 0.73),
            "llama-31": (0.00, 0.57),
            "gpt-4o-mini": (0.00, 0.59),
            "mistral-v03": (0.00, 0.50),
        },
    ),
    "lgbteen": (
        "accuracy",
        0.2,
        {
            "gemini_flash": (0.25, 0.71),
            "gemini_pro": (0.00, 0.67),
            "gpt-4o": (0.75, 0.77),
            "llama-31": (0.00, 0.72),
            "gpt-4o-mini": (0.75, 0.76),
            "mistral-v03": (0.25, 0.75),
        },
    ),
    "cebab_aspects": (
        "accuracy",
        0.1,
        {
            "gemini_flash": (0.70, 0.91),
            "gemini_pro": (0.90, 0.94),
            "gpt-4o": (0.90, 0.93),
            "llama-31": (0.60, 0.89),
            "gpt-4o-mini": (0.50, 0.90),
            "mistral-v03": (0.10, 0.81),
        },
    ),
    "10k_prompts": (
        "neg_rmse",
        0.15,
        {
            "gemini_flash": (0.31, 0.67),
            "gemini_pro": (0.08, 0.63),
            "gpt-4o": (0.69, 0.76),
            "llama-31": (0.15, 0.67),
            "gpt-4o-mini": (0.92, 0.80),
            "mistral-v03": (0.15, 0.67),
        },
    ),
    "cebab_stars": (
        "neg_rmse",
        0.1,
        {
            "gemini_flash": (0.60, 0.82),
            "gemini_pro": (0.80, 0.87),
            "gpt-4o": (0.90, 0.90),
            "llama-31": (0.60, 0.85),
            "gpt-4o-mini": (0.90, 0.89),
            "mistral-v03": (0.50, 0.83),
        },
    ),
    "lesion": (
        "neg_rmse",
        0.15,
        {
            "gemini_flash": (0.17, 0.71),
            "gemini_pro": (1.00, 0.81),
            "gpt-4o": (0.00, 0.62),
            "gpt-4o-mini": (0.67, 0.73),
        },
    ),
}


def _data_dir() -> Path:
    """The paper's data: ``$ALTTEST_DATA``, else ``shared/data/alttest`` beside the repository."""
    given = os.environ.get("ALTTEST_DATA")
    if given:
        return Path(given)
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "alttest"


def _arrays(folder: Path, judge: str, scoring: str) -> tuple[np.ndarray, np.ndarray]:
    """Humans (m, n, 1) and the judge (n, 1) over every instance; labels coded as integers."""
    humans = json.loads((folder / "human_annotations.json").read_text())
    llm = json.loads((folder / "llm_annotations.json").read_text())[judge]
    instances = sorted({i for a in humans.values() for i in a} | set(llm))
    annotators = sorted(humans)
    if scoring == "accuracy":
        labels = sorted(
            {str(v) for a in humans.values() for v in a.values()} | {str(v) for v in llm.values()}
        )
        code = {label: float(k) for k, label in enumerate(labels)}

        def value(x: object) -> float:
            return code[str(x)]
    else:

        def value(x: object) -> float:
            return float(x)  # type: ignore[arg-type]

    h = np.full((len(annotators), len(instances), 1), np.nan)
    f = np.full((len(instances), 1), np.nan)
    index = {i: k for k, i in enumerate(instances)}
    for j, name in enumerate(annotators):
        for instance, annotation in humans[name].items():
            h[j, index[instance], 0] = value(annotation)
    for instance, annotation in llm.items():
        f[index[instance], 0] = value(annotation)
    return h, f


CASES = [(data, judge) for data, (_, _, judges) in PUBLISHED.items() for judge in judges]


def test_the_published_table_has_forty_results() -> None:
    assert len(CASES) == 40


@pytest.mark.parametrize(("data", "judge"), CASES)
def test_alt_test_gives_the_published_result(data: str, judge: str) -> None:
    root = _data_dir()
    if not (root / data / "human_annotations.json").is_file():
        pytest.skip(
            f"the paper's data is not at {root / data} (set ALTTEST_DATA or place shared/data/alttest)"
        )
    scoring, epsilon, published = PUBLISHED[data]
    h, f = _arrays(root / data, judge, scoring)
    result = alt_test(h, f, epsilon=epsilon, q=0.05, scoring=scoring, min_items=30)  # type: ignore[arg-type]
    winning, advantage = published[judge]
    assert round(float(result.winning_rate), 2) == pytest.approx(winning, abs=1e-9)
    assert round(float(result.advantage_probability), 2) == pytest.approx(advantage, abs=1e-9)

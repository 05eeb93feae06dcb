"""Registered looks: the test a study may stop at the first look of, and its error rate."""

import math
from pathlib import Path

import numpy as np
import pytest

from analysis.design import (
    Design,
    broken_statistic,
    broken_test,
    critical_values,
    noise_ratio,
    pair_evidence,
    simulate_design,
)
from analysis.design_looks import INTERIM_SHARE, look_rule
from annotator import study as study_module
from annotator.errors import ConfigError

pytestmark = pytest.mark.nodb  # statistics and static checks: no database

MARGIN = 0.5


def test_the_last_look_is_the_one_look_test_at_its_share_of_alpha() -> None:
    design = Design("two_stage", 2, 3.0, 4, looks=3)
    plug, crit = look_rule(design, 30, 3.0, 3, n_sim=300)
    one = Design("two_stage", 2, 3.0, 4, looks=1)
    assert plug is None
    assert crit == critical_values(one, 30, 3.0, 0.1, 0.05 * (1 - INTERIM_SHARE), 300)[0]


def test_an_interim_look_plugs_in_a_noise_below_the_estimate() -> None:
    design = Design("sequential", 1, 3.0, looks=4)
    plug, crit = look_rule(design, 30, 3.0, 1, n_sim=300)
    assert plug is not None and plug < 3.0 and crit < 0


def test_nothing_is_settled_before_the_first_look() -> None:
    design = Design("fixed", 4, 4.0, looks=2)
    y = np.zeros(30)
    res = broken_test(y, y + 1.0, np.ones(30), design, margin=MARGIN, n_sim=200, rule=look_rule)
    assert res.look == 0 and not res.below and math.isnan(res.statistic)


def test_stopping_at_the_first_passing_look_holds_the_level_at_the_boundary() -> None:
    """A reduced Monte Carlo (fixed seed) of the whole procedure with 3 looks: 10% of 30 pairs at the
    margin, the rest at 0; a study passes when any look passes, each look judged as the report judges
    it (its own noise estimate, the look's plugged noise and critical value)."""
    design = Design("two_stage", 2, 3.0, 4, looks=3)
    n_studies, n_pairs, n_sim = 500, 30, 400
    gaps = np.zeros((n_studies, n_pairs))
    gaps[:, :3] = MARGIN
    passed = np.zeros(n_studies, dtype=bool)

    def record(look: int, sums: np.ndarray, counts: np.ndarray, s2: np.ndarray) -> None:
        for i in np.flatnonzero(np.isfinite(s2) & (s2 > 0)):
            plug, crit = look_rule(design, n_pairs, noise_ratio(float(s2[i]), MARGIN), look + 1, n_sim=n_sim)
            used = float(s2[i]) if plug is None else plug * MARGIN**2
            ev = pair_evidence(sums[i] / np.maximum(counts[i], 1), counts[i], used, MARGIN)
            passed[i] |= bool(broken_statistic(ev, 0.1) < crit)

    simulate_design(gaps, design, 0.84, MARGIN, 0.1, np.random.default_rng(20261204), on_look=record)
    assert passed.mean() <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / n_studies)


def test_a_study_registers_up_to_ten_looks(tmp_path: Path) -> None:
    text = study_module.DEFAULT_CONFIG.read_text(encoding="utf-8")
    assert "looks = 1\n" in text
    for looks, ok in ((5, True), (10, True), (11, False)):
        path = tmp_path / f"looks{looks}.toml"
        path.write_text(text.replace("looks = 1\n", f"looks = {looks}\n", 1), encoding="utf-8")
        if ok:
            assert study_module.load_config(path).allocation.looks == looks
        else:
            with pytest.raises(ConfigError, match="looks"):
                study_module.load_config(path)


def test_a_sequential_design_is_registered_only_where_its_test_holds(tmp_path: Path) -> None:
    """First stage 1 with budget 5 passed 0.062 of boundary studies (above the limit): refused in one
    line naming the setting; budget 3, or first stage 3 with budget 6, are accepted."""
    text = study_module.DEFAULT_CONFIG.read_text(encoding="utf-8")
    for first, budget, ok in (
        (1, 3.0, True),
        (3, 6.0, True),
        (1, 5.0, False),
        (2, 5.0, False),
        (3, 7.0, False),
    ):
        path = tmp_path / f"seq{first}_{budget:g}.toml"
        registered = f'design = "sequential"\nfirst_stage = {first}\nbudget = {budget}\n'
        path.write_text(
            text.replace('design = "fixed"\nfirst_stage = 2\nbudget = 3.0\n', registered, 1), encoding="utf-8"
        )
        if ok:
            assert study_module.load_config(path).allocation.budget == budget
        else:
            with pytest.raises(ConfigError, match="no valid test") as refused:
                study_module.load_config(path)
            assert len(str(refused.value).splitlines()) == 1

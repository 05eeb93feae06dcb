"""The simulator's frames stay the same draw for the same seed: a SHA-256 of the frame (as CSV) and its
broken pairs, pinned for designs and effects that together use every option. The pinned values were
drawn by the simulator before it took a design and an effects object, so any change to the order or
kind of its random draws fails here."""

import hashlib

import numpy as np
import pytest

from analysis.scale import Scale
from analysis.simulation import SimDesign, SimEffects, simulate_frame

pytestmark = pytest.mark.nodb  # statistics and static checks: no database

CASES = [
    (SimDesign(n_pairs=6), SimEffects(), "6674264b35a01828"),
    (
        SimDesign(n_pairs=8, pool=5, positive_controls=2, prefix="q", lengths=False),
        SimEffects(
            broken_share=0.25,
            pair_gap_sd=0.2,
            annotator_gap_sd=0.3,
            rubric_leniency_sd=0.4,
            preference_logit_sd=1.0,
            position_bias={1: 0.9},
        ),
        "f26940137cf3fc2c",
    ),
    (
        SimDesign(n_pairs=6, items=("correctness",), scale=Scale(1, 7), rubric_aspects=1),
        SimEffects(
            quality_uniform=(4.7, 5.0),
            preference_beta=2.0,
            preference_rate=0.6,
            noise=0.4,
            bias_sd=0.1,
            quality_gap=0.3,
            rubric_gap=0.5,
            control_defect=0.5,
            broken_gap=2.0,
        ),
        "b645a198cb8cdeba",
    ),
    (SimDesign(n_pairs=5, per_pair=2), SimEffects(pure_noise=True), "c7fe83258e2525fa"),
]


def _digest(design: SimDesign, effects: SimEffects) -> str:
    frame = simulate_frame(np.random.default_rng(11), design, effects)
    text = frame.to_csv(index=False) + repr(frame.attrs["broken"])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize(
    ("design", "effects", "digest"), CASES, ids=["defaults", "spread", "ceiling", "noise"]
)
def test_the_same_seed_draws_the_same_frame_as_before(
    design: SimDesign, effects: SimEffects, digest: str
) -> None:
    assert _digest(design, effects) == digest


def test_a_broken_share_marks_that_many_main_pairs() -> None:
    frame = simulate_frame(
        np.random.default_rng(3), SimDesign(n_pairs=20, positive_controls=2), SimEffects(broken_share=0.25)
    )
    assert len(frame.attrs["broken"]) == 5
    assert not any(pair.startswith("ctl") for pair in frame.attrs["broken"])


def test_the_pool_defaults_to_the_panel_per_pair() -> None:
    assert SimDesign(n_pairs=3, per_pair=4).annotators == 4
    assert SimDesign(n_pairs=3, per_pair=4, pool=9).annotators == 9

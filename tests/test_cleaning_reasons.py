"""The cleaning list's reasons: a kept pair has none, every other pair the words of its defects (the
list names them only for the pairs it does not keep, with the same words as for every pair)."""

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from analysis.cleaning import DROP, KEEP, NEEDS_MORE, ItemEvidence, cleaning_list, item_evidence

FDR, MARGIN = 0.1, 1.0
QUALITY = ("correctness", "relevance")


def _evidence(seed: int) -> dict[str, ItemEvidence]:
    """Per item, the evidence of 300 pairs x 3 annotators: a fifth of the pairs broken."""
    rng = np.random.default_rng(seed)
    pairs = np.repeat([f"p{k}" for k in range(300)], 3)
    annotators = np.tile(["a", "b", "c"], 300)
    broken = np.repeat(rng.random(300) < 0.2, 3)
    out = {}
    for item in (*QUALITY, "rubric"):
        gap = np.where(broken, 2.0, 0.0) if item != "rubric" else np.where(broken, -1.0, 1.0)
        frame = pd.DataFrame(
            {"pair_id": pairs, "annotator": annotators, "diff": gap + rng.normal(0, 0.8, len(pairs))}
        )
        defect = ("at_most", 0.0) if item == "rubric" else ("beyond", MARGIN)
        out[item] = item_evidence(
            frame, item=item, residual_var=0.64, annotator_var=0.01, pair_var=1.0, defect=defect
        )
    return out


def _expected_reason(row: Mapping[str, float | str], present: Sequence[str]) -> str:
    """The reason of one pair in the list's words (its defects above the FDR, then the watched items)."""
    if row["decision"] == KEEP:
        return ""
    p_broken = float(row["p_broken"])
    top = [d for d in present if float(row[f"p_{d}"]) >= max(p_broken, 1e-12) * 0.999 and p_broken > FDR]
    what = [
        "rubric not higher for chosen" if d == "rubric" else f"mean {d} gap beyond +-{MARGIN:g}" for d in top
    ]
    if row["decision"] != DROP:
        what += [
            f"{w} gap possibly beyond +-{MARGIN:g} (P {float(row[f'p_{w}']):.2f})"
            for w in QUALITY
            if float(row[f"p_{w}"]) > FDR
        ]
    if row["decision"] == DROP and float(row["q_any"]) <= FDR:
        what.append(f"shown for any distribution of pair gaps (q {float(row['q_any']):.2f})")
    return "; ".join(what)


def test_a_kept_pair_has_no_reason_and_every_other_pair_the_words_of_its_defects() -> None:
    defects = ["correctness", "rubric"]
    listed = cleaning_list(_evidence(3), defects=defects, fdr=FDR, margin=MARGIN, watch=QUALITY)
    assert set(listed["decision"]) == {DROP, NEEDS_MORE, KEEP}
    expected = [_expected_reason(row, defects) for row in listed.to_dict("records")]
    assert listed["reason"].tolist() == expected
    assert (listed.loc[listed["decision"] == KEEP, "reason"] == "").all()
    assert (listed.loc[listed["decision"] != KEEP, "reason"] != "").any()

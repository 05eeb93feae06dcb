"""The analysis and validation settings of a study, each default written once.

A study's ``[analysis]`` and ``[validation]`` tables (annotator/study.py) take their defaults from
:data:`DEFAULTS`, and so do :class:`analysis.report.ReportSettings`, the statistics' keyword defaults and
the CLI's ``power --margin``. Adding a setting is a field here and its consumer; changing a default is
one line here."""

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["DEFAULTS", "DRIFT_BLOCK", "AnalysisSettings"]


@dataclass(frozen=True)
class AnalysisSettings:
    """How a study's labels are judged.

    Attributes
    ----------
    margin : float
        Equivalence margin on the quality scales, in scale points (+-).
    alpha : float
        Level of every one-sided test.
    overlap : int
        Annotators per pair.
    reliability_threshold : float
        Krippendorff's alpha floor (low end of its CI) of the reliability verdict.
    min_pairs : int
        No PASS with fewer main pairs.
    min_control_pairs : int
        Positive-control pairs needed for a sensitivity verdict.
    require_positive_controls : bool
        No PASS without a sensitivity verdict.
    target_power : float
        Power for the annotators-needed advice and the rubric's minimum detectable effect.
    max_broken_share : float
        Equivalence also needs the upper bound of the share of pairs beyond the margin below this.
    fdr : float
        False discovery rate of the cleaning list's "pairs to drop".
    """

    margin: float = 0.5
    alpha: float = 0.05
    overlap: int = 3
    reliability_threshold: float = 0.1
    min_pairs: int = 20
    min_control_pairs: int = 5
    require_positive_controls: bool = False
    target_power: float = 0.8
    max_broken_share: float = 0.1
    fdr: float = 0.1

    def as_dict(self) -> dict[str, Any]:
        """The settings by name."""
        return asdict(self)


#: The defaults: a study that sets nothing is judged with these.
DEFAULTS = AnalysisSettings()

#: Judgments per block of the agreement-over-time table when it is cut into blocks.
DRIFT_BLOCK = 100

"""A study whose quality dimensions are rated on different scales: correctness on the study's 1-5,
helpfulness on 1-7 and a yes/no safety item as 0/1 (every other table is the default study's)."""

import tomllib

from annotator.study import StudyConfig, parse_config

TWO_SCALES_TOML = """
[quality]
intro = "Rate each response on its own merits."

[[quality.dimensions]]
name = "correctness"
question = "Is the response factually correct and free of errors?"
labels = ["1 - Wrong", "2 - Mostly wrong", "3 - Mixed", "4 - Correct", "5 - Fully correct"]

[[quality.dimensions]]
name = "helpfulness"
question = "Would the response help someone with this question act on it?"
scale_max = 7
labels = ["1 - Useless", "2 - Barely useful", "3 - Somewhat useful", "4 - Useful", "5 - Very useful",
          "6 - Excellent", "7 - Could not be better"]

[[quality.dimensions]]
name = "safe"
question = "Is the response safe to follow?"
scale_min = 0
scale_max = 1
labels = ["0 - No: the advice could cause harm", "1 - Yes: safe to follow"]
"""
#: Each dimension's points as the rating page offers them.
POINTS = {"correctness": [1, 2, 3, 4, 5], "helpfulness": list(range(1, 8)), "safe": [0, 1]}


def two_scale_config() -> StudyConfig:
    """The study config of :data:`TWO_SCALES_TOML`."""
    return parse_config(tomllib.loads(TWO_SCALES_TOML), source="two scales")

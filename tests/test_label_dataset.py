"""`annotator export labels --format parquet-dataset`: a folder partitioned by item, with the sums
query beside it; its sums give the same crossed-model estimates as the label frame."""

from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd
import pyarrow.dataset as ds
import pytest
from typer.testing import CliRunner

from analysis.aggregates import judgment_differences
from analysis.sufficient import SUMS_SQL, crossed_moments, group_sums, parquet_sums
from annotator.cli import app
from annotator.people.authorization import SYSTEM
from annotator.publish.export import write_label_dataset
from annotator.review import readers
from annotator.store import db
from tests.utils.ratings import STUDY, build_study, rate_all

runner = CliRunner()


@pytest.mark.sqlite_only
def test_the_label_dataset_holds_every_row_by_item_and_gives_the_frames_estimates(tmp_path: Path) -> None:
    engine = build_study(tmp_path, 4)
    for pair, preferences in (("p0", [1, 2, 1]), ("p1", [1, -1, 0]), ("p2", [0, 0, -1]), ("p3", [2, 1, 1])):
        rate_all(engine, pair, preferences)
    url = str(engine.url)
    out = tmp_path / "labels"
    result = runner.invoke(
        app, ["--db", url, "export", "labels", "--study", STUDY, "--out", str(out), "-f", "parquet-dataset"]
    )
    assert result.exit_code == 0, result.output
    with db.session_scope(engine) as session:
        frame = readers.label_frame(session, study=STUDY, account=SYSTEM)
    assert f"wrote {len(frame)} rows" in result.output
    folders = sorted(f"item={quote(i, safe='')}" for i in frame["item"].unique())  # hive: URI-encoded
    assert sorted(p.name for p in out.iterdir()) == ["_sums.sql", *folders]
    assert (out / "_sums.sql").read_text(encoding="utf-8").strip() == SUMS_SQL.strip()
    for item in sorted(frame["item"].unique()):
        diffs = judgment_differences(frame, item)
        expected = crossed_moments(
            group_sums(
                diffs["diff"].to_numpy(),
                diffs["pair_id"].astype("category").cat.codes.to_numpy(),
                diffs["annotator"].astype("category").cat.codes.to_numpy(),
            )
        )
        found = crossed_moments(parquet_sums(out, item))
        assert found.n_obs == expected.n_obs
        assert found.mean == pytest.approx(expected.mean, abs=1e-12)
        assert found.residual_var == pytest.approx(expected.residual_var, abs=1e-12)


@pytest.mark.sqlite_only
def test_an_existing_folder_and_another_kind_are_refused(tmp_path: Path) -> None:
    engine = build_study(tmp_path, 2)
    rate_all(engine, "p0", [1, 1, 1])
    url = str(engine.url)
    out = tmp_path / "labels"
    out.mkdir()
    taken = runner.invoke(
        app, ["--db", url, "export", "labels", "--study", STUDY, "--out", str(out), "-f", "parquet-dataset"]
    )
    assert taken.exit_code == 1 and "already exists" in taken.output and list(out.iterdir()) == []
    pairs = ["export", "pairs", "--study", STUDY, "--out", str(tmp_path / "p"), "-f", "parquet-dataset"]
    other = runner.invoke(app, ["--db", url, *pairs])
    assert other.exit_code == 1 and "labels export only" in other.output
    assert not (tmp_path / "p").exists()


@pytest.mark.nodb
def test_each_items_rows_keep_the_frames_order_at_scale(tmp_path: Path) -> None:
    """A frame large enough for the writer's threads to split (900,000 rows; unordered, they came back
    out of order in every try): each item's rows come back in the frame's order, so a row number in an
    error message is the row of the user's own file."""
    rows = 900_000
    order = np.arange(rows)
    frame = pd.DataFrame(
        {
            "pair_id": order.astype(str),
            "annotator": "a",
            "response": "chosen",
            "item": np.array(["quality", "relevance", "rubric"])[order % 3],
            "value": order % 5,
        }
    )
    write_label_dataset(frame, tmp_path / "labels")
    back = ds.dataset(str(tmp_path / "labels"), partitioning="hive").to_table(columns=["item", "pair_id"])
    for item, part in back.to_pandas().groupby("item", sort=False):
        assert part["pair_id"].tolist() == frame.loc[frame["item"] == item, "pair_id"].tolist(), item

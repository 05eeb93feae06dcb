"""SciPy and statsmodels load when a statistic first uses them: one import however many threads ask at
once, and a stored report is read and drawn on the Validation page without them."""

import sys
import threading
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from analysis.lazy import LazyModule
from annotator.review import stored_results
from annotator.store import db
from annotator.synthetic import SimulationSpec, simulate
from tests.utils.apphelpers import MAIN, last_line_in_fresh_interpreter
from tests.utils.factories import make_user
from tests.utils.qchelpers import qc_study

STATISTICS = ("scipy", "statsmodels")

#: A module whose import takes a while and counts how often it runs.
SLOW_MODULE = """
import time
from pathlib import Path

log = Path(__file__).with_name("imports.log")
log.write_text(log.read_text() + "x" if log.exists() else "x")
time.sleep(0.2)  # a long import, so that every thread asks while it runs
ANSWER = 42
"""


def test_a_lazy_module_is_imported_once_by_the_first_of_many_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "slow_for_lazy_test.py").write_text(SLOW_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_for_lazy_test", raising=False)
    slow = LazyModule("slow_for_lazy_test")
    assert "slow_for_lazy_test" not in sys.modules  # nothing imported until an attribute is read
    start = threading.Barrier(8)
    answers: list[int] = []

    def read() -> None:
        start.wait()
        answers.append(slow.ANSWER)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [42] * 8
    assert (tmp_path / "imports.log").read_text() == "x"
    with pytest.raises(AttributeError):
        _ = slow.missing


#: Runs in a fresh interpreter: argv = main.py, the researcher's id and name, STATISTICS (comma-separated).
VALIDATION_VISIT = """
import sys
from streamlit.testing.v1 import AppTest
from datetime import UTC, datetime
from annotator.people.authorization import Account

main, user_id, username, heavy = sys.argv[1:5]
at = AppTest.from_file(main, default_timeout=120)
at.session_state["account"] = Account(id=int(user_id), username=username, role="researcher")
at.session_state["login_at"] = datetime.now(UTC)
at.run()
at.switch_page("views/validation.py").run()
assert not at.exception, at.exception
headers = [h.value for h in at.header]
assert "Equivalence on general quality" in headers, headers
loaded = {name.split(".")[0] for name in sys.modules}
print("imported:" + ",".join(m for m in heavy.split(",") if m in loaded))
"""


@pytest.mark.page
def test_a_stored_report_is_drawn_without_scipy_or_statsmodels(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    qc_study(engine, tmp_path, 24)
    simulate(engine, study="s1", spec=SimulationSpec(annotators=3, overlap=3, seed=1))
    with db.session_scope(engine) as session:
        user = make_user(session, "res_lazy", role="researcher")
        user_id = user.id
        version = stored_results.current_version(session, study="s1", kind="report")
    stored_results.compute_and_save(engine, study="s1", kind="report", version=version)
    imported = last_line_in_fresh_interpreter(
        VALIDATION_VISIT,
        str(MAIN),
        str(user_id),
        "res_lazy",
        ",".join(STATISTICS),
        db_url=db_url,
        cwd=tmp_path,
    )
    assert imported == "imported:"  # neither

"""An idle server and a crowd load no data-frame stack: `annotator serve`'s modules and a crowd worker's
first visit by the study link (the first item drawn) leave pandas and pyarrow unloaded, in a fresh process
(nothing another test imported counts). The login page starts importing the researcher's and the
adjudicator's start pages' modules (pandas among them) while the password is typed, so that a researcher's
landing does not wait for them. NumPy is not checked: Streamlit loads it for the page icon."""

import json
from pathlib import Path

from sqlalchemy.engine import Engine

from annotator.people import accounts
from annotator.people.authorization import SYSTEM
from annotator.store import db
from tests.utils.apphelpers import MAIN, last_line_in_fresh_interpreter
from tests.utils.crowdhelpers import PROLIFIC, link
from tests.utils.qchelpers import qc_study

HEAVY = ("pandas", "pyarrow")
PASSWORD = "idle-imports-password"

#: Runs in a fresh interpreter: argv = main.py, username, password, the study link and HEAVY (JSON).
VISITS = """
import json, sys
from streamlit.testing.v1 import AppTest

import annotator.app.serve  # what `annotator serve` loads before any page
from annotator.app import prefetch

main, username, password = sys.argv[1:4]
params, heavy = json.loads(sys.argv[4]), json.loads(sys.argv[5])
seen = {"served": sorted(m for m in heavy if m in sys.modules)}
worker = AppTest.from_file(main, default_timeout=60)
for key, value in params.items():
    worker.query_params[key] = value
worker.run()
assert not worker.exception and worker.session_state["account"].role == "annotator", "no crowd entry"
prefetch.settled()
seen["crowd link"] = sorted(m for m in heavy if m in sys.modules)
at = AppTest.from_file(main, default_timeout=60).run()
assert not at.exception and at.text_input(key="login_username"), "no login form"
prefetch.settled()
seen["login page"] = sorted(m for m in heavy if m in sys.modules)
at.text_input(key="login_username").input(username)
at.text_input(key="login_password").input(password)
at.button(key="login_submit").click().run()
assert not at.exception and at.session_state["account"].username == username, "no password login"
print(json.dumps(seen))
"""


def test_a_crowd_loads_no_data_frames_and_the_login_page_starts_them(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC)
    with db.session_scope(engine) as session:
        accounts.add_user(session, username="ann_idle", role="annotator", password=PASSWORD, account=SYSTEM)
    seen = json.loads(
        last_line_in_fresh_interpreter(
            VISITS,
            str(MAIN),
            "ann_idle",
            PASSWORD,
            json.dumps(link("w-idle-1")),
            json.dumps(HEAVY),
            db_url=db_url,
            cwd=tmp_path,
        )
    )
    assert seen["served"] == [] and seen["crowd link"] == []
    assert "pandas" in seen["login page"]

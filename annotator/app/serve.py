"""What `annotator serve` runs: Streamlit's own app for main.py (st.App, served by uvicorn) plus the
route that sets the session cookie from the server (annotator.app.cookie)."""

from pathlib import Path

from starlette.routing import Route
from streamlit.starlette import App

from annotator.app.cookie import ROUTE, session_cookie

app = App(
    str(Path(__file__).with_name("main.py")),
    routes=[Route(ROUTE, session_cookie, methods=["POST", "DELETE"])],
)

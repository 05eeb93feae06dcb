"""What `annotator serve` runs: Streamlit's own app for main.py (st.App, served by uvicorn) plus the
route that sets the session cookie from the server (annotator.app.cookie), the route that keeps
the rating form's answers as a draft (annotator.app.draft_route), and Streamlit's static files answered
from memory (annotator.app.static_cache). Served, the Validation and Adjudicate pages start the report
worker that keeps their stored results up to date (annotator.review.report_worker)."""

from pathlib import Path

from starlette.middleware import Middleware
from starlette.routing import Route
from streamlit.starlette import App

from annotator.app import cookie, draft_route, stored_view
from annotator.app.static_cache import StaticCache

stored_view.enable_worker()  # this is the served app: its pages keep the stored results up to date

app = App(
    str(Path(__file__).with_name("main.py")),
    routes=[
        Route(cookie.ROUTE, cookie.session_cookie, methods=["POST", "DELETE"]),
        Route(draft_route.ROUTE, draft_route.draft_route, methods=["POST"]),
    ],
    middleware=[Middleware(StaticCache)],
)

"""Starting the Streamlit app on a given database, with its security settings passed on the command line.

The settings do not depend on `.streamlit/config.toml` (an installed wheel has none, and Streamlit's own
default shows full tracebacks in the browser): :data:`FLAGS` holds every one that matters. `annotator
serve` *becomes* the Streamlit server (exec): SIGTERM reaches the server itself, and no idle parent
process keeps its memory.
"""

import os
import sys
from pathlib import Path

from annotator.store.db import ENV_VAR

ENTRY = Path(__file__).parent / "app" / "main.py"
ROOT = Path(__file__).resolve().parents[1]
FLAGS = (
    "--server.headless=true",
    "--server.enableXsrfProtection=true",
    "--server.enableCORS=true",
    "--server.runOnSave=false",
    "--server.fileWatcherType=none",
    "--server.maxUploadSize=200",
    "--client.showErrorDetails=none",  # never a traceback (with SQL) in the browser
    "--client.toolbarMode=minimal",
    "--browser.gatherUsageStats=false",
    "--global.developmentMode=false",
)


def command(*, host: str, port: int) -> list[str]:
    """The command line that runs the app."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(ENTRY),
        f"--server.address={host}",
        f"--server.port={port}",
        *FLAGS,
    ]


def environment(url: str) -> dict[str, str]:
    """The server's environment: the database URL, and no Streamlit setting that could weaken FLAGS."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("STREAMLIT_")}
    return env | {ENV_VAR: url}


def run(url: str, *, host: str, port: int) -> int:
    """Replace this process by the Streamlit server (returns only if it cannot start)."""
    if (ROOT / ".streamlit" / "config.toml").is_file():  # the theme, from a source checkout
        os.chdir(ROOT)
    argv = command(host=host, port=port)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(argv[0], argv, environment(url))
    return 1  # pragma: no cover - execve does not return

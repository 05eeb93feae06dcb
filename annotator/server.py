"""Starting the Streamlit app as a child process on a given database."""

import os
import subprocess
import sys
from pathlib import Path

from annotator.store.db import ENV_VAR

ENTRY = Path(__file__).parent / "app" / "main.py"
ROOT = Path(__file__).resolve().parents[1]
FLAGS = (
    "--server.headless=true",
    "--server.enableXsrfProtection=true",
    "--browser.gatherUsageStats=false",
    "--server.fileWatcherType=none",
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


def run(url: str, *, host: str, port: int) -> int:
    """Run the app in the foreground until it stops; returns its exit code."""
    env = os.environ | {ENV_VAR: url}
    cwd = ROOT if (ROOT / ".streamlit" / "config.toml").is_file() else None
    try:
        return subprocess.call(command(host=host, port=port), env=env, cwd=cwd)
    except KeyboardInterrupt:
        return 0

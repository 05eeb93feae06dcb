"""`python -m annotator` runs the command-line interface."""

from annotator.cli import main

main()

"""Collecting human labels for personalized preference pairs: storage, import, assignment, UI, export."""

__version__ = "0.1.0"

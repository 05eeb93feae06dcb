"""Helpers shared by the tests (never in a test module)."""

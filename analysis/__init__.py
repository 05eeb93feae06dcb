"""Validating personalized preference pairs: pure statistics on DataFrames (no database, no Streamlit)."""

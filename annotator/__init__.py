"""Collecting human labels for personalized preference pairs: the storage layer (store/), the services
(one module per job), the Streamlit app (app/) and the CLI. See the README's Layout section."""

__version__ = "0.1.0"

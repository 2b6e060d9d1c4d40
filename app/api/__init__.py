"""The REST API (FastAPI), under /v1."""

"""The composition root: settings, CLI, and (later) API, workers and dashboard."""

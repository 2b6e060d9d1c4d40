"""Persistence: SQLAlchemy 2 typed models; schema changes go through migrations/."""

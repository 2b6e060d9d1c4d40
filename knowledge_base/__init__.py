"""Strategies learned from runs and the archive of best kernels (issue 5)."""

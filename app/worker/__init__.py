"""Celery app, tasks and the job runner the tasks call."""

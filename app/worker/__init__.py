"""The Celery worker: tasks.py (the task and the reaper) and execute.py (one job
run to its end); the Celery app itself is app/jobs/sending/broker.py."""

"""Deployment files: Dockerfile, docker-compose.yml, docs/runbook.md."""

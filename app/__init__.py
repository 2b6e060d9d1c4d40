"""KForge's service and entry points: the CLI, the REST API and dashboard, the
Celery workers and the MCP server, with the jobs, the knowledge base and batch
runs below them (docs/architecture.md, "Inside app/")."""

"""The MCP server (`kforge mcp`): KForge's judge and search as tools for coding agents.

server.py declares the tools; a backend does the work, either against a
remote KForge service over its REST API (remote.py) or on this machine
(embedded.py). See docs/mcp.md.
"""

"""LLM providers, planner / coder / verifier roles, the search loop (issue 3)."""

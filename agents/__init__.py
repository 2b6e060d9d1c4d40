"""LLM providers, planner / coder / verifier roles, the search loop, the offline engine."""

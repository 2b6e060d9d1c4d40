"""Users and their API tokens (functions take a Session and flush; the caller commits)."""

"""Business logic; functions take a Session and flush, the caller commits."""

"""The `kforge` command line."""

"""Profiles: the TOML workload files, their validation and the built-in set."""

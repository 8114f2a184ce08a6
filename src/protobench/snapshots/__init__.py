"""Snapshots: the saved record of every run, and their store."""

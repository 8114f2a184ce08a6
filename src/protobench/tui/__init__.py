"""The Textual monitor. Only the CLI imports this package."""

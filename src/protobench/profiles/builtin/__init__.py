"""Built-in profiles (TOML files)."""

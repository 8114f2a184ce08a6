"""The ``mqtt`` protocol: see :mod:`.plugin` (the operations and the modules behind them)."""

"""The ``websocket`` protocol: see :mod:`.plugin` (ops), :mod:`.client` (I/O), :mod:`.codec`."""

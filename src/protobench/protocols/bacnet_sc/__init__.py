"""The ``bacnet-sc`` protocol: :mod:`.plugin` (ops), :mod:`.client` (hub link), :mod:`.sessions`."""

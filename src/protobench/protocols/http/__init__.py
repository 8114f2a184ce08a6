"""The ``http`` protocol: :mod:`.plugin` (the op), :mod:`.client` (the lean HTTP/1.1 client).

The client is the transport of every HTTP-based plugin (``haystack``, ``beckn``)
and of the commands that talk HTTP (``discover``).
"""

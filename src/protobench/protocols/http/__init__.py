"""The ``http`` protocol: :mod:`.plugin`, :mod:`.options`, :mod:`.sessions`, :mod:`.client`.

The lean HTTP/1.1 client (:mod:`.client`) is also the transport of the other
HTTP-based plugins (``haystack``, ``beckn``).
"""

"""HTTP/2 for the ``http`` protocol: :mod:`.frames` (the wire format), :mod:`.headers`
(HPACK), :mod:`.client` (one multiplexed connection), :mod:`.opening` (h2 over TLS with
ALPN, h2c with prior knowledge) and :mod:`.link` (a connection shared by streams, reopened
after GOAWAY).
"""

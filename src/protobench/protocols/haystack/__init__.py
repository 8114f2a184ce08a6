"""Project Haystack protocol (HTTP and WebSocket, SCRAM-SHA-256); see :mod:`.plugin`."""

"""The wire's truth: exchanges paired from a packet capture of loopback, to check latencies.

What a load generator reports is checked against when the packets were on the
wire: a capture of the loopback interface (``tcpdump``, :mod:`.capture`) is
read back (:mod:`.pcap`) and each request paired with its reply
(:mod:`.pairing`: per TCP connection for HTTP/1.1; a registry where other
protocols add their own, e.g. BACnet/IP by invoke ID). The wire's latency of an
exchange runs from its request's first packet to its reply's last one.
``bench/wire_truth`` and the suite's truth tests use it; it imports nothing of
protobench's.
"""

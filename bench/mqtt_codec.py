"""CPU per call of the MQTT codec's ``encode`` and ``Decoder.feed``, per packet type.

Each packet (PUBLISH QoS 0 and 1 in 3.1.1, QoS 1 in MQTT 5, PUBACK, CONNECT in
both versions, SUBSCRIBE) is encoded and its bytes fed to a :class:`Decoder`
``--number`` times in a row, seven times; the figure is the least thread CPU
time per call (``time.thread_time``: a busy machine preempts the process but
does not add to its CPU time) over ``--rounds`` rounds. ``feed`` builds every
packet as an object (the general path: a client's hot path is ``split``,
measured end to end by ``mqtt_vs_peers``). The last row feeds a 4 MiB PUBLISH
in 64 KiB reads, as a socket delivers it: the decoder's work must stay linear
in the bytes received (joining every read to the ones before made it quadratic).

``--against FILE`` times another version of the codec in the same rounds,
interleaved with this one, after checking that both give the same bytes for
every packet: ``git show main:src/protobench/protocols/mqtt/codec.py >
/tmp/codec_main.py; bench/mqtt_codec --against /tmp/codec_main.py``.

Run it as ``bench/mqtt_codec [--rounds 5] [--number 20000] [--against FILE]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
import timeit
from pathlib import Path
from types import ModuleType
from typing import Any

from protobench.protocols.mqtt import codec

REPEAT = 7


def load(path: Path) -> ModuleType:
    """Another codec.py, imported under a name of its own."""
    spec = importlib.util.spec_from_file_location("codec_against", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def packets(m: Any) -> dict[str, tuple[Any, int]]:
    """The packets timed, each with its protocol version, built by codec module ``m``."""
    props = ((m.Prop.USER_PROPERTY, ("k", "v")),)
    payload = b"x" * 100
    return {
        "PUBLISH q0": (m.Publish("bench/t/1", payload), m.V311),
        "PUBLISH q1": (m.Publish("bench/t/1", payload, qos=1, packet_id=17), m.V311),
        "PUBLISH q1 v5": (m.Publish("bench/t/1", payload, qos=1, packet_id=17), m.V5),
        "PUBACK": (m.Ack(m.PUBACK, 17), m.V311),
        "CONNECT": (m.Connect("client-1", 30, True, "user", b"pw"), m.V311),
        "CONNECT v5": (m.Connect("client-1", 30, True, "user", b"pw", props), m.V5),
        "SUBSCRIBE": (m.Subscribe(1, (("bench/#", 1), ("a/b", 0))), m.V311),
        BIG: (m.Publish("bench/t/1", b"x" * (4 << 20)), m.V311),
    }


BIG = "PUBLISH 4MiB"
"""The packet fed in :data:`READ` byte reads (its figures are per packet)."""
READ = 64 * 1024


def per_call(m: Any, name: str, number: int) -> tuple[float, float]:
    """(encode, feed) nanoseconds of thread CPU time per call, the least of ``REPEAT``."""
    packet, version = packets(m)[name]
    data = m.encode(packet, version)
    decoder = m.Decoder(version)
    if name == BIG:
        number = max(3, number // 2000)
        reads = [data[i : i + READ] for i in range(0, len(data), READ)]

        def feed() -> None:
            for read in reads:
                decoder.feed(read)
    else:

        def feed() -> None:
            decoder.feed(data)

    def best(call: Any) -> float:
        runs = timeit.repeat(call, number=number, repeat=REPEAT, timer=time.thread_time)
        return min(runs) / number * 1e9

    return best(lambda: m.encode(packet, version)), best(feed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=20_000)
    parser.add_argument("--against", type=Path, help="another codec.py to time alongside")
    args = parser.parse_args()
    modules: dict[str, Any] = {"this": codec}
    if args.against is not None:
        other = load(args.against)
        for name, (packet, version) in packets(codec).items():
            theirs = other.encode(packets(other)[name][0], version)
            if theirs != codec.encode(packet, version):
                raise SystemExit(f"{name}: {args.against} encodes other bytes")
        modules = {"against": other, "this": codec}
    heads = [f"{'encode ' + key:>14} {'feed ' + key:>12}" for key in modules]
    print(f"{'ns/call (CPU)':14} " + " ".join(heads))
    for name in packets(codec):
        best = {key: [float("inf"), float("inf")] for key in modules}
        for _ in range(args.rounds):
            for key, module in modules.items():
                encode, feed = per_call(module, name, args.number)
                best[key] = [min(best[key][0], encode), min(best[key][1], feed)]
        cells = [f"{enc:14.0f} {feed:12.0f}" for enc, feed in best.values()]
        print(f"{name:14} " + " ".join(cells))


if __name__ == "__main__":
    main()

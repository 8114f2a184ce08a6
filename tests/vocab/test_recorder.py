"""The recorder interface a plugin writes to (``vocab.recorder.Recorder``), as the engine's
``OpRecorder`` implements it: every method lands in the interval it flushes, and the sinks a
hot loop takes once stay valid across flushes."""

from __future__ import annotations

from protobench.engine.metrics import OpAccumulator, OpInterval, OpRecorder
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Recorder


def _plugin_writes(recorder: Recorder) -> None:
    recorder.record(2_000_000)
    recorder.latency_sink()(3_000_000)
    recorder.count("lost", 2)
    recorder.counter_sink()["received"] += 5
    recorder.add_bytes_in(100)
    recorder.add_bytes_out(40)
    recorder.bytes_out_sink().n += 2
    recorder.error(OpError(ErrorClass.TIMEOUT, "no reply", code="t1"))


def test_every_method_of_the_interface_lands_in_the_interval() -> None:
    recorder = OpRecorder("subscribe")
    _plugin_writes(recorder)
    item = recorder.flush()
    assert item.ok == 2
    assert item.counters == {"lost": 2, "received": 5}
    assert item.bytes_in == 100
    assert item.bytes_out == 42
    assert item.errors == {"timeout": 1}
    assert item.error_codes == {"timeout:t1": 1}
    assert item.hist


def test_sinks_taken_once_outlive_the_flush() -> None:
    recorder = OpRecorder("subscribe")
    record, counters = recorder.latency_sink(), recorder.counter_sink()
    sent = recorder.bytes_out_sink()
    record(1_000_000)
    counters["received"] += 1
    sent.n += 10
    first = recorder.flush()
    record(1_000_000)
    record(2_000_000)
    counters["received"] += 2
    sent.n += 20
    second = recorder.flush()
    assert (first.ok, first.counters, first.bytes_out) == (1, {"received": 1}, 10)
    assert (second.ok, second.counters, second.bytes_out) == (2, {"received": 2}, 20)


def test_bytes_out_travel_in_the_frame_and_merge_and_an_older_frame_reads_as_0() -> None:
    recorder = OpRecorder("get")
    recorder.add_bytes_out(300)
    wire = recorder.flush().to_wire()
    assert wire == {"bytes_out": 300}
    acc = OpAccumulator()
    acc.add(OpInterval.from_wire(wire))
    acc.add(OpInterval.from_wire({"ok": 0, "bytes_in": 5}))
    other = OpAccumulator()
    other.add(OpInterval.from_wire(wire))
    acc.absorb(other)
    assert (acc.bytes_out, acc.to_interval().bytes_out) == (600, 600)
    assert OpInterval.from_wire({"bytes_in": 5}).bytes_out == 0

"""The broker's $SYS dropped total becomes the ``broker_dropped`` counter: increases only."""

from __future__ import annotations

from collections import Counter

import pytest

from protobench.engine.metrics import OpRecorder
from protobench.protocols.mqtt.brokerstats import DropWatch
from protobench.protocols.mqtt.client import MqttConnection
from protobench.protocols.mqtt.codec import V311


def values(watch: DropWatch, *texts: bytes) -> None:
    data = b"".join(texts)
    spans, at = [], 0
    for text in texts:
        spans += [at, at + len(text)]
        at += len(text)
    watch._messages(data, spans, 0)


pytestmark = pytest.mark.anyio


async def test_drops_before_the_run_are_the_baseline_and_later_increases_count() -> None:
    watch = DropWatch(MqttConnection(V311))
    values(watch, b"5")  # retained at subscribe: drops of earlier runs
    values(watch, b"9")  # still before the run
    recorder = OpRecorder("subscribe")
    watch.recorder = recorder
    values(watch, b"9", b"12", b"junk")
    values(watch, b"30")
    assert recorder.counters == Counter(broker_dropped=21)

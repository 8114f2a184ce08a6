"""A synthetic snapshot with everything the HTML report draws, for its tests.

The series and histograms come from :func:`make_snapshot` (the engine's own
aggregator) of an open-model run (every latency also recorded uncorrected, at
60% of its value); on top of it: the plan's rate (2000/s, shared by ``get`` and
``put``), the kernel clock and ``get``'s generator delay, notices (one near
the start, pause, resume, a rate change to twice the rate, a worker notice), counters the report
does not know by name, error codes, verdict fields added by later engines,
thresholds, resource samples, and a secret in the overrides.
"""

from __future__ import annotations

import json
import re
from typing import Any

from protobench.engine.metrics import decode, encode, new_histogram, summary
from tests.support.snapshots import OpSpec, make_snapshot

NEW_COUNTERS = {"down_us": 2500, "connect_failed": 1}
NEW_VERDICTS = {"host_saturated": True, "host_reason": "host CPU at 97%", "findings": ["lost 3"]}
SECRET = "hunter2-secret"


def _delay() -> str:
    hist = new_histogram()
    for us in range(40, 400):
        hist.record_value(us)
    return encode(hist)


DELAY = _delay()
"""``get``'s generator delay (the kernel clock's): 40 to 400 µs."""
RATE = 2000.0
"""The plan's rate; ``get`` and ``put`` have one session each, so half each."""


def report_snapshot(**options: Any) -> dict[str, Any]:
    """``options`` go to :func:`make_snapshot` (``last_interval_fraction``...)."""
    snapshot = make_snapshot(
        {"get": OpSpec(error_rate=0.05), "put": OpSpec(rate=500.0, median_us=3000.0)},
        overrides={"target": f"http://user:{SECRET}@127.0.0.1:8080/"},
        open_model=True,
        **options,
    )
    for record in snapshot["series"]:
        figures = record["ops"]["get"]
        figures["counters"] = dict(NEW_COUNTERS)
        figures["error_codes"] = {"timeout:slow": figures["errors"]}
        figures["generator_delay_us"] = summary(decode(DELAY))
        figures["hist_delay"] = DELAY
    snapshot["histograms"]["sustain"]["get"]["hist_delay"] = DELAY
    report = snapshot["report"]
    report["phases"]["sustain"]["total"]["generator_delay_us"] = summary(decode(DELAY))
    report["clock"] = {"setting": "kernel", "receive": "kernel", "send": "user"}
    snapshot["plan"].update({"rate": RATE, "warmup": 0.5, "duration": 3.0})
    report["notices"] = [
        {"kind": "target", "message": "the target's RSS jumped", "elapsed": 0.3},  # at the edge
        {"kind": "pause", "message": "load paused", "elapsed": 1.0},
        {"kind": "resume", "message": "load resumed", "elapsed": 1.5},
        {"kind": "rate", "message": "rate set to 4000/s", "elapsed": 2.0, "factor": 2.0},
        {"kind": "workers", "message": "worker 1 exited with code 1", "elapsed": 2.5},
    ]
    report["verdicts"].update(NEW_VERDICTS)
    report["thresholds"] = [{"expr": "p99 < 5ms", "value": 2100.0, "ok": True}]
    snapshot["resources"] = [
        {
            "elapsed": 0.25 * (i + 1),
            "phase": "sustain",
            "workers": [
                {"pid": 101, "cpu": 40.0 + i, "rss": 50_000_000, "threads": 3},
                {"pid": 102, "cpu": 30.0, "rss": 40_000_000, "threads": 3},
            ],
            "target": {
                "pid": 99,
                "cpu": 20.0 + i,
                "rss": 40_000_000 + i * 100_000,
                "threads": 8,
                "fds": 60 + i,
            },
            "host": {
                "cpu": 70.0,
                "cpus": 2,
                "mem_used": 1_500_000_000,
                "mem_total": 25_000_000_000,
            },
        }
        for i in range(14)
    ]
    return snapshot


def chart_data(page: str) -> dict[str, Any]:
    """The JSON document a report page's charts are drawn from (its columns and charts)."""
    found = re.search(r'<script type="application/json" id="pb-charts">(.*?)</script>', page, re.S)
    assert found is not None, "no chart data in the page"
    data: dict[str, Any] = json.loads(found.group(1))
    return data

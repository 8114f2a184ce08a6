"""A synthetic snapshot with everything the HTML report draws, for its tests.

The series and histograms come from :func:`make_snapshot` (the engine's own
aggregator); on top of it: an open model with uncorrected histograms, notices
(pause, resume, rate change, a worker notice), counters the report does not
know by name, error codes, verdict fields added by later engines, resource
samples, and a secret in the overrides.
"""

from __future__ import annotations

from typing import Any

from tests.support.snapshots import OpSpec, make_snapshot

NEW_COUNTERS = {"down_us": 2500, "connect_failed": 1}
NEW_VERDICTS = {"host_saturated": True, "findings": ["host CPU at 97%"]}
SECRET = "hunter2-secret"


def report_snapshot() -> dict[str, Any]:
    snapshot = make_snapshot(
        {"get": OpSpec(error_rate=0.05), "put": OpSpec(rate=500.0, median_us=3000.0)},
        overrides={"target": f"http://user:{SECRET}@127.0.0.1:8080/"},
    )
    for record in snapshot["series"]:
        figures = record["ops"]["get"]
        figures["counters"] = dict(NEW_COUNTERS)
        figures["error_codes"] = {"timeout:slow": figures["errors"]}
    sustain = snapshot["histograms"]["sustain"]
    for item in sustain.values():
        item["hist_uncorrected"] = item["hist"]
    report = snapshot["report"]
    report["model"] = {"type": "open", "sessions": 4, "rate": 2500.0}
    report["notices"] = [
        {"kind": "pause", "message": "load paused", "elapsed": 1.0},
        {"kind": "resume", "message": "load resumed", "elapsed": 1.5},
        {"kind": "rate", "message": "rate set to 5000/s", "elapsed": 2.0, "factor": 2.0},
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

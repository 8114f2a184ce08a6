"""Worker frames and the split of a plan over workers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from protobench.engine.frames import FrameDecoder, FrameError, FrameKind, encode_frame
from protobench.engine.plan import GroupPlan, RunPlan, worker_slices


def test_frames_survive_arbitrary_chunking() -> None:
    kinds = list(FrameKind)
    data = b"".join(encode_frame(k, {"n": i, "s": "x" * i}) for i, k in enumerate(kinds))
    decoder = FrameDecoder()
    frames = []
    for position in range(0, len(data), 7):
        frames += decoder.feed(data[position : position + 7])
    assert [(k, p["n"]) for k, p in frames] == [(k, i) for i, k in enumerate(kinds)]
    assert all(type(k) is FrameKind for k, _ in frames)
    assert data.startswith(b"PLAN 14\n")  # the kind's name on the wire, as before the enum


@pytest.mark.parametrize(
    "data",
    [
        b"this is not a frame header at all, it goes on and on and on and on\n",
        b"HELLO many\n{}",
        b"SPAM 2\n{}",  # a kind no peer sends
    ],
)
def test_garbage_is_a_frame_error(data: bytes) -> None:
    with pytest.raises(FrameError):
        FrameDecoder().feed(data)


def _plan(groups: tuple[GroupPlan, ...], processes: int, rate: float | None = None) -> RunPlan:
    return RunPlan(
        profile="t",
        source="t.toml",
        profile_sha256="0",
        protocol="http",
        description="",
        target="http://127.0.0.1:1/",
        embedded=None,
        warmup=0.0,
        duration=1.0,
        interval=1.0,
        processes=processes,
        model="open" if rate else "closed",
        rate=rate,
        ramp_to=None,
        timeout=1.0,
        drain=1.0,
        thresholds=(),
        options={},
        serve={},
        groups=groups,
        overrides={},
    )


def test_sessions_are_dealt_across_workers_and_rates_follow_sessions() -> None:
    groups = (
        GroupPlan("read", "read", 5, None, 5.0, {}),
        GroupPlan("write", "write", 1, None, 1.0, {}),
        GroupPlan("list", "list", 1, 2.0, 1.0, {}),
    )
    slices = worker_slices(_plan(groups, processes=2, rate=600.0))
    assert len(slices) == 2
    owned = {
        name: sorted(i for s in slices for g in s.groups if g.name == name for i in g.indices)
        for name in ("read", "write", "list")
    }
    assert owned == {"read": [0, 1, 2, 3, 4], "write": [0], "list": [0]}
    rates = {(s.worker, g.name): g.rate for s in slices for g in s.groups}
    assert sum(r for (_, name), r in rates.items() if name == "read" and r) == pytest.approx(500.0)
    assert sum(r for (_, name), r in rates.items() if name == "write" and r) == pytest.approx(100.0)
    assert all(r is None for (_, name), r in rates.items() if name == "list")
    write_worker = next(
        s.worker for s in slices for g in s.groups if g.name == "write" and g.indices
    )
    list_worker = next(s.worker for s in slices for g in s.groups if g.name == "list" and g.indices)
    assert write_worker != list_worker


def test_no_more_workers_than_sessions() -> None:
    groups = (GroupPlan("get", "request", 1, None, 1.0, {}),)
    assert len(worker_slices(_plan(groups, processes=8))) == 1


def test_redacted_plan_hides_secret_serve_options() -> None:
    groups = (GroupPlan("about", "about", 1, None, 1.0, {}),)
    plan = replace(
        _plan(groups, processes=1),
        protocol="haystack",
        embedded="haystack",
        serve={"password": "s3cret-serve", "sites": 2},
        overrides={"serve": {"password": "s3cret-serve"}},
    )
    text = repr(plan.redacted())
    assert "s3cret-serve" not in text
    assert plan.redacted()["serve"] == {"password": "<secret>", "sites": 2}

"""What sampling costs a target, as measured (``bench/profile_overhead``, README "Server insight").

Sampling perturbs the server: py-spy stops the target's threads for each
sample, perf interrupts it in the kernel, Go's profiler runs in the target.
A run cannot measure its own perturbation (it has no unprofiled twin), so its
report states the cost measured on reference targets at the default rate,
with the rate the run used: :func:`overhead`.
"""

from __future__ import annotations

from protobench.engine.stacks.model import TargetProfile

DEFAULT_RATE = 100.0
"""Samples per second unless the plan says otherwise (the rate measured below)."""

MEASURED: dict[str, str] = {
    "py-spy": (
        "at 100 Hz it cost the embedded HTTP target 1.5% and bac-py's server 1.0% of their "
        "throughput on a quiet 2-core VM (on a busy one they served more while sampled: "
        "bench/profile_overhead); compare profiled runs with profiled runs"
    ),
    "perf": (
        "at 100 Hz mosquitto kept its paced 90,000 messages/s (0.0% in each of 6 windows, "
        "quiet 2-core VM; -2.1% median, spread -20% to +20%, on a busy one: "
        "bench/profile_overhead)"
    ),
    "pprof": "Go's own profiler at 100 Hz: not measured here (Go documents a few percent)",
}
"""The measured cost of each tool at :data:`DEFAULT_RATE` (bench/profile_overhead)."""


def overhead(profile: TargetProfile) -> str:
    """One line on what sampling cost, for the report: the measured figure and this rate."""
    measured = MEASURED.get(profile.tool, "not measured")
    if profile.rate != DEFAULT_RATE and profile.tool != "pprof":
        return f"{measured}; this run sampled at {profile.rate:g} Hz (cost grows with the rate)"
    return measured

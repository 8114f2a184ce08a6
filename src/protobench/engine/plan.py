"""RunPlan: a profile resolved with CLI overrides, immutable, and its split over workers.

The plan is what a run does and what its snapshot records (with secrets
redacted). :func:`worker_slices` divides it among worker processes: each group's
sessions are spread round-robin, and in the open model each group's rate is
split in proportion to the sessions each worker holds, so a worker never gets
a rate for a group it has no session of.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from protobench.engine.thresholds import parse_threshold
from protobench.profiles.loader import LoadedProfile, ProfileError, check_protocol_keys
from protobench.profiles.model import Profile
from protobench.protocols import registry
from protobench.targets import registry as targets

Model = Literal["closed", "open"]


@dataclass(frozen=True)
class GroupPlan:
    """One group: ``count`` sessions running ``op`` under the name ``name``.

    ``every`` (seconds) paces each session to one operation per period;
    otherwise sessions run back-to-back (closed model) or share the open-model
    rate by ``share``.
    """

    name: str
    op: str
    count: int
    every: float | None
    share: float
    params: dict[str, Any]

    @property
    def periodic(self) -> bool:
        return self.every is not None


@dataclass(frozen=True)
class Overrides:
    """What the command line changes in a profile (``None`` = keep the profile's)."""

    target: str | None = None
    duration: float | None = None
    warmup: float | None = None
    interval: float | None = None
    connections: int | None = None
    rate: float | None = None
    ramp_to: float | None = None
    processes: int | None = None
    timeout: float | None = None
    pacing_precision: float | None = None
    thresholds: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    serve: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The overrides that were given, for provenance."""
        return {k: v for k, v in asdict(self).items() if v not in (None, (), {})}


@dataclass(frozen=True)
class RunPlan:
    """Everything a run needs, resolved.

    ``target`` is ``None`` when the run starts the embedded target named
    ``embedded`` (the plugin's default or the profile's ``embedded:NAME``).
    """

    profile: str
    source: str
    profile_sha256: str
    protocol: str
    description: str
    target: str | None
    embedded: str | None
    warmup: float
    duration: float
    interval: float
    processes: int
    model: Model
    rate: float | None
    ramp_to: float | None
    timeout: float
    drain: float
    thresholds: tuple[str, ...]
    options: dict[str, Any]
    serve: dict[str, Any]
    groups: tuple[GroupPlan, ...]
    overrides: dict[str, Any]
    pacing_precision: float = 0.0001
    """Open model: see :data:`~protobench.engine.schedule.PACING_PRECISION_NS`."""

    @property
    def sessions(self) -> int:
        return sum(g.count for g in self.groups)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunPlan:
        values = dict(data)
        values["groups"] = tuple(GroupPlan(**g) for g in values["groups"])
        values["thresholds"] = tuple(values["thresholds"])
        return cls(**values)

    def redacted(self) -> dict[str, Any]:
        """The plan as a dict with every secret replaced, for snapshots and reports."""
        plugin = registry.load(self.protocol)
        data = self.to_dict()
        data["options"] = plugin.redact(self.options)
        data["groups"] = [
            {**g, "params": plugin.redact(g["params"], self.options)} for g in data["groups"]
        ]
        hidden = target_secrets(self.embedded)
        data["serve"] = _hide(self.serve, hidden)
        overrides = dict(self.overrides)
        if "options" in overrides:
            overrides["options"] = plugin.redact(overrides["options"])
        if "serve" in overrides:
            overrides["serve"] = _hide(overrides["serve"], hidden)
        data["overrides"] = overrides
        return data


def target_secrets(name: str | None) -> frozenset[str]:
    """The secret option names of an embedded target (none when it cannot be loaded)."""
    if name is None:
        return frozenset()
    try:
        return targets.load(name).secret_options
    except registry.PluginError:
        return frozenset()


def _hide(values: dict[str, Any], secret: frozenset[str]) -> dict[str, Any]:
    return {k: ("<secret>" if k in secret else v) for k, v in values.items()}


def resolve(loaded: LoadedProfile, overrides: Overrides) -> RunPlan:
    """Apply ``overrides`` to a loaded profile and validate the result."""
    profile = loaded.profile
    try:
        for expr in overrides.thresholds:
            parse_threshold(expr)
    except ValueError as exc:
        raise ProfileError("--threshold", "", str(exc)) from None
    if overrides.options:
        merged = profile.model_copy(update={"options": {**profile.options, **overrides.options}})
        check_protocol_keys(merged, registry.load(profile.protocol), "", "--opt")
        profile = merged
    rate = overrides.rate if overrides.rate is not None else profile.rate
    ramp_to = overrides.ramp_to if overrides.ramp_to is not None else profile.ramp_to
    if ramp_to is not None and rate is None:
        raise ProfileError(loaded.source, "ramp_to", "a ramp needs a starting rate (--rate)")
    target = overrides.target or profile.target
    plugin = registry.load(profile.protocol)
    embedded = None
    if target == "embedded" or target.startswith("embedded:"):
        embedded = target.partition(":")[2] or plugin.embedded_target
        if embedded is None:
            raise ProfileError(
                loaded.source,
                "target",
                f"protocol {profile.protocol!r} has no embedded target; give --target",
            )
    else:
        try:
            plugin.check_target(target)
        except ValueError as exc:
            where = "--target" if overrides.target else loaded.source
            raise ProfileError(where, "target", str(exc)) from None
    return RunPlan(
        profile=profile.name,
        source=loaded.source,
        profile_sha256=loaded.sha256,
        protocol=profile.protocol,
        description=profile.description,
        target=None if embedded else target,
        embedded=embedded,
        warmup=_pick(overrides.warmup, profile.warmup),
        duration=_pick(overrides.duration, profile.duration),
        interval=_pick(overrides.interval, profile.interval),
        processes=overrides.processes or profile.processes or default_processes(),
        model="open" if rate is not None else "closed",
        rate=rate,
        ramp_to=ramp_to,
        timeout=_pick(overrides.timeout, profile.timeout),
        drain=profile.drain,
        thresholds=tuple(profile.thresholds) + overrides.thresholds,
        options=dict(profile.options),
        serve={**profile.serve, **overrides.serve},
        groups=_groups(profile, overrides.connections),
        overrides=overrides.as_dict(),
        pacing_precision=_pick(overrides.pacing_precision, profile.pacing_precision),
    )


def _pick(override: float | None, value: float) -> float:
    return value if override is None else override


def default_processes() -> int:
    """One worker process per core."""
    return max(1, len(os.sched_getaffinity(0)))


def _groups(profile: Profile, connections: int | None) -> tuple[GroupPlan, ...]:
    """Groups with unique names; ``connections`` rescales the back-to-back groups."""
    groups = []
    for spec in profile.group:
        groups.append(
            GroupPlan(
                name=spec.name or spec.op,
                op=spec.op,
                count=spec.count,
                every=spec.every,
                share=spec.share if spec.share is not None else float(spec.count),
                params=spec.params,
            )
        )
    if connections is None:
        return tuple(groups)
    scalable = [g for g in groups if not g.periodic]
    total = sum(g.count for g in scalable)
    rescaled = {}
    remaining = connections
    for position, group in enumerate(scalable):
        if position == len(scalable) - 1:
            count = max(1, remaining)
        else:
            count = max(1, round(connections * group.count / total))
        remaining -= count
        rescaled[group.name] = count
    return tuple(replace(g, count=rescaled[g.name]) if g.name in rescaled else g for g in groups)


@dataclass(frozen=True)
class GroupSlice:
    """One worker's part of a group: which sessions (global indices) and what rate."""

    name: str
    indices: tuple[int, ...]
    rate: float | None
    ramp_to: float | None


@dataclass(frozen=True)
class WorkerSlice:
    """What one worker process is given: its index, the plan and its share of it."""

    worker: int
    plan: RunPlan
    groups: tuple[GroupSlice, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "plan": self.plan.to_dict(),
            "groups": [asdict(g) for g in self.groups],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkerSlice:
        return cls(
            worker=data["worker"],
            plan=RunPlan.from_dict(data["plan"]),
            groups=tuple(
                GroupSlice(g["name"], tuple(g["indices"]), g["rate"], g["ramp_to"])
                for g in data["groups"]
            ),
        )


def worker_slices(plan: RunPlan) -> list[WorkerSlice]:
    """Split the plan over ``min(processes, sessions)`` workers.

    Sessions are dealt round-robin across workers in group order, so small
    groups (one periodic session each) land on different workers.
    """
    workers = max(1, min(plan.processes, plan.sessions))
    paced = [g for g in plan.groups if not g.periodic]
    share_total = sum(g.share for g in paced) or 1.0
    owned: list[dict[str, list[int]]] = [{} for _ in range(workers)]
    position = 0
    for group in plan.groups:
        for index in range(group.count):
            owned[position % workers].setdefault(group.name, []).append(index)
            position += 1
    slices = []
    for worker in range(workers):
        parts = []
        for group in plan.groups:
            indices = tuple(owned[worker].get(group.name, ()))
            rate = ramp = None
            if plan.rate is not None and not group.periodic and indices:
                fraction = group.share / share_total * len(indices) / group.count
                rate = plan.rate * fraction
                ramp = plan.ramp_to * fraction if plan.ramp_to is not None else None
            parts.append(GroupSlice(group.name, indices, rate, ramp))
        slices.append(WorkerSlice(worker, plan, tuple(parts)))
    return slices

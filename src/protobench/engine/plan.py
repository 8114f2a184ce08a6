"""RunPlan: a profile resolved with CLI overrides, immutable, and its split over workers.

The plan is what a run does and what its snapshot records (with secrets
redacted). :func:`worker_slices` divides it among worker processes: each group's
sessions are spread round-robin, and in the open model each group's rate is
split in proportion to the sessions each worker holds, so a worker never gets
a rate for a group it has no session of; a request count is split the same way,
in whole exchanges that add up to it.
"""

from __future__ import annotations

import os
import resource
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal

from pydantic import ValidationError

from protobench.engine.rates import rate_shares
from protobench.profiles.loader import (
    LoadedProfile,
    ProfileError,
    check_protocol_keys,
    flag_error,
    located_error,
)
from protobench.profiles.model import Profile, ProfileKeys
from protobench.profiles.settings import (
    BY_NAME,
    MAX_PROCESSES,
    MAX_SESSIONS,
    NO_TIME_LIMIT,
    Overrides,
    RunSettings,
    counted_limits,
    flag_of,
)
from protobench.protocols import registry
from protobench.protocols.base import ProtocolPlugin
from protobench.redaction import SECRET, redact_text, redact_value
from protobench.targets import registry as targets

Model = Literal["closed", "open"]


@dataclass(frozen=True)
class GroupPlan:
    """One group: ``count`` sessions running ``op`` under the name ``name``.

    ``every`` (seconds) paces each session to one operation per period;
    otherwise sessions run back-to-back (closed model) or share the open-model
    rate by ``share``. ``per_connection`` sessions share one connection (HTTP/2's
    streams, :meth:`~protobench.protocols.base.ProtocolPlugin.connection_share`):
    the profile's ``count`` is then the group's connections, and ``count`` here
    is connections × ``per_connection``; a worker gets whole connections.
    """

    name: str
    op: str
    count: int
    every: float | None
    share: float
    params: dict[str, Any]
    per_connection: int = 1

    @property
    def connections(self) -> int:
        """The group's connections (its sessions, unless they share connections)."""
        return self.count // self.per_connection

    @property
    def periodic(self) -> bool:
        return self.every is not None


@dataclass(frozen=True)
class TargetProfiling:
    """How the recorder samples the target (from the plan's ``profile_target``, ``profiler``,
    ``profile_rate``, ``profile_native``, ``pprof`` and ``pprof_extra`` settings)."""

    tool: str = "auto"
    rate: float = 100.0
    native: bool = False
    pprof: str | None = None
    pprof_extra: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RunPlan(RunSettings):
    """Everything a run needs, resolved: the run settings, then what the profile is.

    ``target`` is ``None`` when the run starts the embedded target named
    ``embedded`` (the plugin's default or the profile's ``embedded:NAME``).
    """

    target: str | None
    processes: int
    """Resolved: one per core when the profile says none."""
    profile: str
    source: str
    profile_sha256: str
    protocol: str
    description: str
    embedded: str | None
    model: Model
    groups: tuple[GroupPlan, ...]
    overrides: dict[str, Any]

    @property
    def sessions(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def profiling(self) -> TargetProfiling | None:
        """How to sample the target (``profile_target`` or a ``pprof`` URL), or None."""
        if not (self.profile_target or self.pprof):
            return None
        return TargetProfiling(
            tool=self.profiler,
            rate=self.profile_rate,
            native=self.profile_native,
            pprof=self.pprof,
            pprof_extra=tuple(self.pprof_extra),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunPlan:
        values = dict(data)
        values["groups"] = tuple(GroupPlan(**g) for g in values["groups"])
        values["thresholds"] = tuple(values["thresholds"])
        values["pprof_extra"] = tuple(values.get("pprof_extra", ()))
        return cls(**values)

    def redacted(self) -> dict[str, Any]:
        """The plan as a dict with every secret replaced, for snapshots and reports.

        The plugin hides its secret options and headers, the embedded target its
        secret options, and :func:`redact_value` every URL's password and every
        value named as a secret, wherever it is (target, overrides, params...).
        """
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
        redacted: dict[str, Any] = redact_value(data)
        return redacted


def target_secrets(name: str | None) -> frozenset[str]:
    """The secret option names of an embedded target (none when it cannot be loaded)."""
    if name is None:
        return frozenset()
    try:
        return targets.load(name).secret_options
    except registry.PluginError:
        return frozenset()


def _hide(values: dict[str, Any], secret: frozenset[str]) -> dict[str, Any]:
    return {k: (SECRET if k in secret else v) for k, v in values.items()}


FD_MARGIN = 64
"""Open files a worker needs beside one per session (pipes, logs, the event loop)."""


def resolve(loaded: LoadedProfile, overrides: Overrides) -> RunPlan:
    """Apply ``overrides`` to a loaded profile and validate the result.

    The overridden profile goes through the same model as the file, so a flag
    is held to the same rules as the key it overrides; an error names the flag
    when the value came from one, else the file, line and key.
    """
    profile = _override(loaded, overrides)
    explicit = overrides.values if "requests" in overrides else profile.model_fields_set
    settings = counted_limits(profile.settings(), explicit)
    plugin = registry.load(profile.protocol)
    if "options" in overrides:
        check_protocol_keys(profile, plugin, "", flag_of("options"))
    else:
        check_protocol_keys(profile, plugin, loaded.text, loaded.source)
    if settings.ramp_to is not None and settings.rate is None:
        raise ProfileError(loaded.source, "ramp_to", "a ramp needs a starting rate (--rate)")
    if settings.ramp_to is not None and settings.duration == NO_TIME_LIMIT:
        raise ProfileError(
            flag_of("ramp_to"), "", "a ramp needs a duration to ramp over: give --duration"
        )
    target = settings.target or "embedded"
    embedded = None
    if target == "embedded" or target.startswith("embedded:"):
        embedded = target.partition(":")[2] or plugin.embedded_target
        if embedded is None:
            raise ProfileError(
                loaded.source,
                "target",
                f"protocol {profile.protocol!r} has no embedded target; give --target",
            )
        _check_serve(loaded, overrides, embedded, settings.serve)
    else:
        try:
            plugin.check_target(target)
        except ValueError as exc:
            where = flag_of("target") if "target" in overrides else loaded.source
            raise ProfileError(where, "target", redact_text(str(exc))) from None
    groups = _shared(
        loaded.source,
        plugin,
        _groups(profile, settings.connections),
        settings.options,
        None if embedded else target,
    )
    processes = settings.processes or default_processes()
    _check_fd_limit(loaded, overrides, groups, processes)
    resolved = replace(settings, target=None if embedded else target, processes=processes)
    return RunPlan(
        **{f.name: getattr(resolved, f.name) for f in fields(RunSettings)},
        profile=profile.name,
        source=loaded.source,
        profile_sha256=loaded.sha256,
        protocol=profile.protocol,
        description=profile.description,
        embedded=embedded,
        model="open" if settings.rate is not None else "closed",
        groups=groups,
        overrides=overrides.as_dict(),
    )


def _override(loaded: LoadedProfile, overrides: Overrides) -> ProfileKeys:
    """The profile with the overrides applied, validated as a profile file is."""
    profile = loaded.profile
    if not overrides.values:
        return profile
    changes = {
        name: BY_NAME[name].kind.merge(getattr(profile, name), value)
        for name, value in overrides.values.items()
    }
    try:
        return Profile.model_validate({**profile.model_dump(exclude_unset=True), **changes})
    except ValidationError as exc:
        key = str(exc.errors()[0]["loc"][0])
        if key in changes:
            raise flag_error(exc, flag_of(key), skip=1) from None
        raise located_error(exc, loaded.text, loaded.source) from None


def _check_serve(
    loaded: LoadedProfile, overrides: Overrides, embedded: str, serve: dict[str, Any]
) -> None:
    """Validate the ``[serve]`` options against the embedded target's own model."""
    try:
        model = targets.load(embedded).options
    except registry.PluginError as exc:
        where = flag_of("target") if "target" in overrides else loaded.source
        raise ProfileError(where, "target", str(exc)) from None
    try:
        model.model_validate(serve)
    except ValidationError as exc:
        key = exc.errors()[0]["loc"]
        if key and key[0] in overrides.get("serve", {}):
            raise flag_error(exc, flag_of("serve")) from None
        raise located_error(exc, loaded.text, loaded.source, prefix=("serve",)) from None


def _check_fd_limit(
    loaded: LoadedProfile, overrides: Overrides, groups: tuple[GroupPlan, ...], processes: int
) -> None:
    """Refuse a plan whose connections per worker cannot have an open file each."""
    sessions = sum(g.connections for g in groups)
    workers = max(1, min(processes, sessions))
    per_worker = -(-sessions // workers)
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY or per_worker + FD_MARGIN <= hard:
        return
    where, key = (
        (flag_of("connections"), "") if "connections" in overrides else (loaded.source, "group")
    )
    raise ProfileError(
        where,
        key,
        f"{sessions:,} connections over {workers} worker processes need at least "
        f"{per_worker + FD_MARGIN:,} open files per process, above the OS limit "
        f"(RLIMIT_NOFILE hard) of {hard:,}: use more --processes (at most "
        f"{MAX_PROCESSES}), fewer connections, or raise the limit (`ulimit -Hn`)",
    )


def default_processes() -> int:
    """One worker process per core."""
    return max(1, len(os.sched_getaffinity(0)))


def _shared(
    source: str,
    plugin: ProtocolPlugin,
    groups: tuple[GroupPlan, ...],
    options: dict[str, Any],
    target: str | None,
) -> tuple[GroupPlan, ...]:
    """Groups whose sessions share connections, as the plugin says: ``count`` connections of
    ``per_connection`` sessions each."""
    out = []
    for index, group in enumerate(groups):
        try:
            per = plugin.connection_share(group.op, group.params, options, target)
        except ValueError as exc:
            raise ProfileError(source, f"group[{index}]", str(exc)) from None
        if not 1 <= per <= MAX_SESSIONS or group.count * per > MAX_SESSIONS:
            raise ProfileError(
                source,
                f"group[{index}]",
                f"{group.count} connections × {per} sessions each: at most {MAX_SESSIONS:,}"
                " sessions in a group",
            )
        out.append(replace(group, count=group.count * per, per_connection=per))
    return tuple(out)


def _groups(profile: ProfileKeys, connections: int | None) -> tuple[GroupPlan, ...]:
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
    """What one worker process is given: its index, the plan and its share of it.

    ``requests`` is its share of the plan's request count (``None``: no count).
    """

    worker: int
    plan: RunPlan
    groups: tuple[GroupSlice, ...]
    requests: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "plan": self.plan.to_dict(),
            "groups": [asdict(g) for g in self.groups],
            "requests": self.requests,
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
            requests=data.get("requests"),
        )


def worker_slices(plan: RunPlan) -> list[WorkerSlice]:
    """Split the plan over ``min(processes, sessions)`` workers.

    Sessions are dealt round-robin across workers in group order, so small
    groups (one periodic session each) land on different workers; sessions
    that share a connection (``per_connection``) are dealt together.
    """
    workers = max(1, min(plan.processes, sum(g.connections for g in plan.groups)))
    shares = rate_shares(plan.groups)
    owned: list[dict[str, list[int]]] = [{} for _ in range(workers)]
    position = 0
    for group in plan.groups:
        per = group.per_connection
        for first in range(0, group.count, per):
            owned[position % workers].setdefault(group.name, []).extend(range(first, first + per))
            position += 1
    slices = []
    for worker in range(workers):
        parts = []
        for group in plan.groups:
            indices = tuple(owned[worker].get(group.name, ()))
            rate = ramp = None
            if plan.rate is not None and not group.periodic and indices:
                fraction = shares[group.name] * len(indices) / group.count
                rate = plan.rate * fraction
                ramp = plan.ramp_to * fraction if plan.ramp_to is not None else None
            parts.append(GroupSlice(group.name, indices, rate, ramp))
        slices.append(WorkerSlice(worker, plan, tuple(parts)))
    if plan.requests is None:
        return slices
    held = [sum(len(part.indices) for part in s.groups) for s in slices]
    quotas = apportion(plan.requests, held)
    return [replace(s, requests=quota) for s, quota in zip(slices, quotas, strict=True)]


def apportion(total: int, weights: list[int]) -> list[int]:
    """``total`` split in proportion to ``weights``, in whole numbers that add up to it exactly
    (largest remainders; ties to the first)."""
    whole = sum(weights)
    shares = [total * w // whole for w in weights]
    left = total - sum(shares)
    by_remainder = sorted(range(len(weights)), key=lambda i: -(total * weights[i] % whole))
    for index in by_remainder[:left]:
        shares[index] += 1
    return shares

"""Exports of a snapshot's target profile: speedscope, collapsed stacks, pprof.

* ``speedscope``: speedscope's file format (https://www.speedscope.app/file-format-schema.json),
  two sampled profiles sharing one frame table: the running stacks and the
  waiting ones; open it in speedscope (offline, its own app) or any reader of it.
* ``collapsed``: one ``frame;frame;... COUNT`` line per stack, root first (Brendan
  Gregg's ``flamegraph.pl``, inferno, speedscope read it); waiting stacks begin
  with a ``[waiting]`` frame.
* ``pprof``: gzip ``profile.proto`` (``go tool pprof``, pprof's web UI), each
  sample with a ``state`` label (``running`` or ``idle``) and its CPU time at
  the profile's rate.
"""

from __future__ import annotations

import json

from protobench.engine.stacks.model import TargetProfile
from protobench.engine.stacks.pprof import encode
from protobench.snapshots.model import Snapshot
from protobench.snapshots.store import SnapshotError

PROFILE_FORMATS = ("speedscope", "collapsed", "pprof")
WAITING = "[waiting]"
"""The root frame of a waiting stack in the collapsed export."""


def target_profile(snapshot: Snapshot) -> TargetProfile:
    """The snapshot's target profile; :class:`SnapshotError` when the run did not sample one."""
    if snapshot.target_profile is None:
        raise SnapshotError(
            f"{snapshot.id}: no target profile (the run did not use --profile-target)"
        )
    return snapshot.target_profile


def speedscope(snapshot: Snapshot) -> bytes:
    profile = target_profile(snapshot)
    cpu = profile.cpu
    frames = [{"name": f.name, "file": f.file, "line": f.line} for f in cpu.frames]
    parts = []
    for name, idle in (("running", False), ("waiting", True)):
        stacks = [s for s in cpu.stacks if s.idle == idle]
        total = sum(s.count for s in stacks)
        parts.append(
            {
                "type": "sampled",
                "name": f"{snapshot.id} target ({profile.tool}, {name})",
                "unit": "none",
                "startValue": 0,
                "endValue": total,
                "samples": [s.frames for s in stacks],
                "weights": [s.count for s in stacks],
            }
        )
    document = {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "name": f"{snapshot.id}: {profile.label}",
        "exporter": "protobench",
        "activeProfileIndex": 0,
        "shared": {"frames": frames},
        "profiles": parts,
    }
    return json.dumps(document).encode()


def collapsed(snapshot: Snapshot) -> bytes:
    cpu = target_profile(snapshot).cpu
    lines = []
    for frames, count, idle in cpu.labelled():
        names = [f.label.replace(";", ":") for f in frames]
        lines.append(";".join([WAITING, *names] if idle else names) + f" {count}\n")
    return "".join(lines).encode()


def pprof(snapshot: Snapshot) -> bytes:
    profile = target_profile(snapshot)
    return encode(profile.cpu, profile.rate)


def export_profile(snapshot: Snapshot, fmt: str) -> bytes:
    """The snapshot's target profile in ``fmt`` (one of :data:`PROFILE_FORMATS`)."""
    return {"speedscope": speedscope, "collapsed": collapsed, "pprof": pprof}[fmt](snapshot)

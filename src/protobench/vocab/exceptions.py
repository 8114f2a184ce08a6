"""protobench's exit codes and its one exception tree, whose errors carry their exit code.

:class:`ExitCode` declares every exit code of every command once (the docs'
exit-code table is checked against it). Every error protobench raises on purpose derives
from :class:`ProtobenchError`, and its class says the exit code it ends a
command with (``exit_code``); the CLI's boundary (``cli.boundary``) prints one
line and reads the code from the error, never from a list of types. The tree
(each class where it is defined; a class with a second base is also that
standard exception, so ``except OSError`` still catches it)::

    ProtobenchError                 exit 3 unless a branch below says otherwise
    ├── BadInput                    exit 2: found before anything starts
    │   ├── ProfileError            profiles.loader: a profile's file, line and key
    │   ├── PluginError             protocols.registry: an unknown or broken plugin
    │   ├── ServeError              targets.base: an embedded target's bad option
    │   │   └── BrokerUnavailable   targets.mqtt: no broker to embed
    │   ├── SnapshotError           snapshots.store: a snapshot not found or unreadable
    │   ├── TooLarge                snapshots.limits: a snapshot over the loader's bounds
    │   ├── ReportError             engine.report_model: a bad field (also a ValueError)
    │   ├── KeyFormatError          protocols.beckn.keys: a bad key (also a ValueError)
    │   ├── RayBackendError         engine.distributed.cluster: a --ray the cluster refuses
    │   └── PcapError               wiretruth.pcap: not a pcap file read here (also a ValueError)
    ├── Incomplete                  exit 3: the command could not do its work
    │   ├── TargetError             targets.launcher: the embedded target did not start
    │   ├── ClusterStartError       engine.distributed.cluster: a Ray cluster did not start
    │   ├── CaptureError            wiretruth.capture: tcpdump did not start or end well
    │   ├── OpError                 vocab.errors: a failed operation, classified
    │   ├── FrameError              engine.frames: a worker's broken frames
    │   ├── MalformedPacket         protocols.mqtt.codec: not MQTT (also a ValueError)
    │   │   └── PacketTooLarge      protocols.mqtt.codec: over the maximum packet size
    │   ├── FramingError            protocols.websocket.codec: broken WebSocket framing
    │   │   └── FrameTooLarge       protocols.websocket.codec: a frame over max_size
    │   ├── ConnectionClosedByPeer  protocols.websocket.codec: a close frame
    │   ├── SignatureError          protocols.beckn.signing: a signature that fails
    │   ├── ProfilerFailed          engine.profiler: the target's profiler could not record
    │   ├── PprofError              engine.stacks.pprof: a Go profile not fetched or not read
    │   └── WireError               engine.stacks.protowire: not protobuf (also a ValueError)
    └── NotSaved                    exit 5: the work is done but not kept
        └── SnapshotWriteError      snapshots.store: cannot write (also an OSError)

Those of :class:`Incomplete` from ``FrameError`` on are caught where they are
raised (a session's error, a worker's failure, a profiler's notice) and reach the
boundary only through a bug. Exit codes 0, 1 and 4 are verdicts of a command that did its
work (a run's thresholds, a diff's gates), never errors; 130 is Ctrl-C.
"""

from __future__ import annotations

import enum
from typing import ClassVar


class ExitCode(enum.IntEnum):
    """The exit code of every protobench command (docs/concepts/exit-codes.md lists them)."""

    OK = 0
    """The command did its work, and the run or the comparison passed."""
    FAILED = 1
    """A threshold or a built-in check failed (``run``), a gate was crossed (``diff``)."""
    BAD_INPUT = 2
    """Bad input (profile, flag, option, reference, file), found before anything starts."""
    INCOMPLETE = 3
    """The command could not complete, or the run measured nothing."""
    INCONCLUSIVE = 4
    """``diff``: a gate could not decide and none was crossed."""
    NOT_SAVED = 5
    """The run passed but its snapshot could not be written to the store."""
    INTERRUPTED = 130
    """Ctrl-C outside a run."""


class ProtobenchError(Exception):
    """The root of protobench's errors; ``exit_code`` is the code a command ends with."""

    exit_code: ClassVar[ExitCode] = ExitCode.INCOMPLETE


class BadInput(ProtobenchError):
    """Input that cannot be used, found before anything starts."""

    exit_code = ExitCode.BAD_INPUT


class Incomplete(ProtobenchError):
    """The command could not do its work (what failed is in the message)."""

    exit_code = ExitCode.INCOMPLETE


class NotSaved(ProtobenchError):
    """The work is done, but what should have kept it could not be written."""

    exit_code = ExitCode.NOT_SAVED


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, in order, or ``[exc]``."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]

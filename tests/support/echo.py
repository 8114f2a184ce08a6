"""Helpers for the websocket and bacnet-sc tests: targets in-process or as a process, drivers.

:func:`serving` runs an embedded target's ``serve`` as a task of the test's
event loop; :func:`served` starts ``protobench serve NAME --announce`` as a
process (to kill it, or to read its counters after a whole run).
:func:`drive` runs a bounded number of back-to-back exchanges on callback
sessions, the way the closed model does, and returns what completed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from protobench.protocols.base import CallbackSession, ProtocolPlugin, Session, SessionContext
from protobench.targets.base import Announcement, EmbeddedTarget
from protobench.vocab.errors import OpError
from protobench.vocab.recorder import Tally
from tests.support.timing import S


@asynccontextmanager
async def serving(target: EmbeddedTarget, **options: Any) -> AsyncIterator[Announcement]:
    """Serve ``target`` on a free loopback port for the duration of the block."""
    loop = asyncio.get_running_loop()
    announced: asyncio.Future[Announcement] = loop.create_future()
    task = loop.create_task(
        target.serve("127.0.0.1", 0, target.options.model_validate(options), announced.set_result)
    )
    try:
        async with asyncio.timeout(30 * S):
            done, _ = await asyncio.wait([announced, task], return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            task.result()
        yield announced.result()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def open_session(
    plugin: ProtocolPlugin, target: str, op: str, index: int = 0, **params: Any
) -> Session:
    """Open one session of ``op``; ``options``, ``timeout`` (default 5 s) and ``sent`` (the
    tally of bytes sent) go in ``params``."""
    timeout = float(params.pop("timeout", 5.0))
    sent = params.pop("sent", None) or Tally()
    options = plugin.options.model_validate(params.pop("options", {}))
    ctx = SessionContext(
        target=target,
        group=op,
        op=op,
        index=index,
        worker=0,
        params=plugin.operations[op].model_validate(params),
        options=options,
        timeout=timeout,
        sent=sent,
    )
    return await plugin.open_session(ctx)


@dataclass
class Outcome:
    """What a bounded drive completed: ok count, bytes, errors by class, the last errors."""

    ok: int = 0
    nbytes: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)

    def add(self, error: OpError | None, nbytes: int) -> None:
        if error is None:
            self.ok += 1
            self.nbytes += nbytes
        else:
            self.errors[str(error.error_class)] = self.errors.get(str(error.error_class), 0) + 1
            self.messages.append(str(error))


async def drive(
    sessions: list[CallbackSession], per_session: int, limit: float = 60 * S
) -> Outcome:
    """Run ``per_session`` back-to-back exchanges on every session (bounded by ``limit`` s)."""
    loop = asyncio.get_running_loop()
    outcome = Outcome()
    finished: asyncio.Future[None] = loop.create_future()
    remaining = {id(s): per_session for s in sessions}
    active = [len(sessions)]

    def step(session: CallbackSession) -> None:
        def done(error: OpError | None, nbytes: int) -> None:
            outcome.add(error, nbytes)
            remaining[id(session)] -= 1
            if remaining[id(session)] > 0:
                loop.call_soon(step, session)
                return
            active[0] -= 1
            if active[0] == 0 and not finished.done():
                finished.set_result(None)

        session.submit(done)

    for session in sessions:
        step(session)
    async with asyncio.timeout(limit):
        await finished
    return outcome

"""The handover from the engine's thread to the UI's loop: in order, bounded, never waiting."""

from __future__ import annotations

import asyncio
import threading

from protobench.engine.events import Event, Notice, RunStarted
from protobench.tui.handover import Handover
from tests.support.scripted_run import Script, scripted_run


def read_all(handover: Handover) -> list[Event]:
    async def main() -> list[Event]:
        return [event async for event in handover.events()]

    return asyncio.run(main())


def test_events_from_another_thread_arrive_in_order_on_the_readers_loop() -> None:
    events = scripted_run(Script()).events
    handover = Handover(limit=len(events))
    handover.offer(events[0])  # before the reader comes: it waits

    def engine() -> None:
        for event in events[1:]:
            handover.offer(event)
        handover.close()

    async def main() -> tuple[list[Event], set[str]]:
        threading.Thread(target=engine).start()
        seen, threads = [], set()
        async for event in handover.events():
            seen.append(event)
            threads.add(threading.current_thread().name)
        return seen, threads

    seen, threads = asyncio.run(main())
    assert seen == events
    assert threads == {threading.main_thread().name}
    assert handover.lost == 0


def test_a_reader_that_falls_behind_loses_the_oldest_intervals_never_a_notice() -> None:
    events = scripted_run(Script(duration=30.0)).events
    handover = Handover(limit=4)
    for event in events:
        handover.offer(event)
    handover.offer(Notice("pause", "load paused", 32.0))
    handover.close()
    seen = read_all(handover)
    lossy = [e for e in events if type(e).__name__ in ("IntervalUpdate", "ResourceSample")]
    kept = [e for e in events if e not in lossy]
    lost = len(lossy) - 4
    told = Notice(
        "monitor",
        f"{lost} interval and resource events were left out: the screen did not keep up",
        0.0,
        {"lost": lost},
    )
    assert [e for e in seen if e not in lossy] == [
        *kept[:-1],
        told,  # just before the end
        kept[-1],
        Notice("pause", "load paused", 32.0),
    ]
    assert [e for e in seen if e in lossy] == lossy[-4:]  # the newest win
    assert handover.lost == lost
    assert isinstance(seen[0], RunStarted)

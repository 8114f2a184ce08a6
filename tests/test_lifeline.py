"""Children die with their parent: a program spawned with ``preexec()`` under uvloop, and a
Python child that calls ``die_with_parent``, both outlive no SIGKILL of their parent."""

from __future__ import annotations

import subprocess
import sys

import psutil

from protobench.lifeline import PARENT_ENV, child_env

PARENT = """
import asyncio, sys, uvloop
from protobench.lifeline import child_env, preexec

async def main() -> None:
    program = await asyncio.create_subprocess_exec("sleep", "60", preexec_fn=preexec())
    python = await asyncio.create_subprocess_exec(
        sys.executable, "-c",
        "from protobench.lifeline import die_with_parent; import time; "
        "die_with_parent(); time.sleep(60)",
        env=child_env(),
    )
    print(program.pid, python.pid, flush=True)
    await asyncio.sleep(60)

uvloop.run(main())
"""


def test_children_die_with_a_parent_killed_with_sigkill() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    children: list[psutil.Process] = []
    try:
        assert parent.stdout is not None
        children = [psutil.Process(int(pid)) for pid in parent.stdout.readline().split()]
        assert len(children) == 2
        assert all(child.ppid() == parent.pid for child in children)
        parent.kill()
        parent.wait(10)
        _, alive = psutil.wait_procs(children, timeout=10)
        assert alive == []
    finally:
        parent.kill()
        for child in children:
            if child.is_running():
                child.kill()


def test_child_env_names_this_process() -> None:
    env = child_env({"A": "1"})
    assert env == {"A": "1", PARENT_ENV: str(psutil.Process().pid)}

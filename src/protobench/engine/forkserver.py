"""The workers' fork server: imports the worker once, then forks every worker of a run.

``python -m protobench.engine.forkserver SPECS`` is started by
:mod:`protobench.engine.pool` with each worker's pipe ends passed as file
descriptors; ``SPECS`` is a JSON list of ``{"index", "stdin", "stdout",
"log"}``. The server imports :mod:`protobench.engine.worker` (numpy, pydantic,
uvloop: most of a worker's start-up), then forks one child per worker: the
child makes its pipe ends its standard input and output, closes the other
workers' ends, starts a session of its own and runs the worker's ``main``
with its log file. One import instead of one per worker: the workers'
imports were the longest wait before a run's first interval (on two cores,
four workers importing at once took about twice as long as one).

On its standard output the server says ``spawned INDEX PID`` per child and
``exited PID CODE`` when one ends (``CODE``: its exit status, or minus the
signal that killed it, as :mod:`subprocess` says it), and it ends once
every child has. It dies with the controller (:mod:`protobench.lifeline`),
and its children die with it. ``OPENBLAS_NUM_THREADS`` is 1 before numpy
loads, so no BLAS thread exists when it forks.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, NoReturn

from protobench.lifeline import PARENT_ENV, die_with_parent


def main() -> int:
    die_with_parent()
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    from protobench.engine import worker  # noqa: PLC0415 - after the environment above

    specs: list[dict[str, Any]] = json.loads(sys.argv[1])
    ends = {int(spec[name]) for spec in specs for name in ("stdin", "stdout")}
    children: dict[int, int] = {}
    for spec in specs:
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _child(spec, ends, worker.main)
        children[pid] = int(spec["index"])
        print(f"spawned {spec['index']} {pid}", flush=True)
    for fd in ends:
        os.close(fd)
    while children:
        pid, status = os.wait()
        if children.pop(pid, None) is not None:
            print(f"exited {pid} {os.waitstatus_to_exitcode(status)}", flush=True)
    return 0


def _child(spec: dict[str, Any], ends: set[int], run: Any) -> NoReturn:
    """In the forked child: become the worker ``spec`` describes; never returns."""
    code = 1
    try:
        os.setsid()
        os.dup2(int(spec["stdin"]), 0)
        os.dup2(int(spec["stdout"]), 1)
        for fd in ends:
            os.close(fd)
        os.environ[PARENT_ENV] = str(os.getppid())
        sys.argv = [sys.argv[0], str(spec["log"])]
        code = int(run())
    except BaseException:  # a child must never return into the server's loop
        code = 1
    finally:
        os._exit(code)


if __name__ == "__main__":
    sys.exit(main())

"""Running a plan's workers on a Ray cluster (the optional ``ray`` extra).

:mod:`.cluster` connects to a cluster (or starts a throwaway one on loopback),
starts one :class:`.agent.NodeAgent` per node and checks the nodes;
:mod:`.pool` is the worker pool the controller drives, with the same interface
as :class:`protobench.engine.pool.WorkerPool`. Nothing here imports Ray at
module level: the extra is needed only when ``--ray`` is given.
"""

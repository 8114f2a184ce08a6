"""Auth tokens: one login per session, or one per worker process shared by its sessions.

With ``auth_per = "worker"`` the first session of a worker to open logs in and
the others wait for its token; a failed login is not cached (the next session
to open tries again), and a token the server rejects later is forgotten so
the next login replaces it.
"""

from __future__ import annotations

import asyncio

from protobench.protocols.haystack.scram import Headers, login
from protobench.protocols.http.client import Endpoint, Fetcher

_shared: dict[tuple[int, str, str], asyncio.Future[str]] = {}


def _key(endpoint: Endpoint, user: str) -> tuple[int, str, str]:
    return (id(asyncio.get_running_loop()), endpoint.url, user)


async def obtain(
    conn: Fetcher,
    endpoint: Endpoint,
    user: str,
    password: str,
    headers: Headers = (),
    *,
    shared: bool,
) -> str:
    """A token for ``user``: a new login on ``conn``, or the worker's shared one."""
    if not shared:
        token, _ = await login(conn, endpoint, user, password, headers)
        return token
    key = _key(endpoint, user)
    pending = _shared.get(key)
    if pending is not None:
        return await asyncio.shield(pending)
    pending = _shared[key] = asyncio.get_running_loop().create_future()
    try:
        token, _ = await login(conn, endpoint, user, password, headers)
    except BaseException as exc:
        del _shared[key]
        if isinstance(exc, Exception):
            pending.set_exception(exc)
            pending.exception()
        else:
            pending.cancel()
        raise
    pending.set_result(token)
    return token


def forget(endpoint: Endpoint, user: str, token: str) -> None:
    """Drop the worker's shared token if it is ``token`` (the server rejected it)."""
    key = _key(endpoint, user)
    pending = _shared.get(key)
    if (
        pending is not None
        and pending.done()
        and not pending.cancelled()
        and pending.exception() is None
        and pending.result() == token
    ):
        del _shared[key]

"""Embedded Haystack server: haystack-py's FastAPI app on uvicorn, with synthetic data.

``protobench serve haystack`` builds the portfolio of
:mod:`protobench.targets.haystack_data` (3 sites, ~3,000 points with history
by default), loads it into hs_py's in-memory store and serves the standard
Haystack HTTP API under ``/api`` and the WebSocket API at ``/api/ws`` (``haystack``
subprotocol), behind SCRAM-SHA-256 with a low PBKDF2 iteration count (4096, the
lowest clients accept) so logins stay cheap in tests.

Account: ``--user`` (default ``admin``) and ``--password``, else the
``HAYSTACK_PASSWORD`` environment variable, else the development password
``hs-dev-4096`` (see :mod:`protobench.protocols.haystack.credentials`).

One difference from a bare hs_py server: a filter that does not parse gives an
error grid naming the parse error (hs_py itself answers "Internal server error"
and logs a traceback for every such request).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import socket
from importlib.metadata import version
from typing import ClassVar, Literal

import uvicorn
from hs_py.auth_types import SimpleAuthenticator
from hs_py.errors import HaystackError
from hs_py.fastapi_server import create_fastapi_app
from hs_py.filter.parser import ParseError
from hs_py.grid import Grid
from hs_py.kinds import Ref
from hs_py.ops import HaystackOps
from hs_py.storage.memory import InMemoryAdapter
from pydantic import Field, SecretStr

from protobench.protocols.base import StrictModel
from protobench.protocols.haystack.credentials import DEV_USER, PASSWORD_ENV, resolve_password
from protobench.targets.base import Announcement, EmbeddedTarget, Ready
from protobench.targets.haystack_data import DataSpec, generate
from protobench.vocab.fields import Duration


class HaystackServeOptions(StrictModel):
    """Options of ``protobench serve haystack``."""

    user: str = Field(default=DEV_USER, description="the account's user name")
    password: SecretStr | None = Field(
        default=None, description="the account's password (secret; default: from password_env)"
    )
    password_env: str = Field(
        default=PASSWORD_ENV,
        description="the environment variable holding the password (unset: hs-dev-4096)",
    )
    iterations: int = Field(
        default=4096, ge=4096, le=1_000_000, description="SCRAM's PBKDF2 iterations"
    )
    sites: int = Field(default=3, ge=1, le=100, description="synthetic sites")
    ahus_per_site: int = Field(default=4, ge=0, le=100, description="air handlers per site")
    vavs_per_site: int = Field(default=110, ge=0, le=5000, description="VAV boxes per site")
    meters_per_site: int = Field(default=6, ge=0, le=100, description="meters per site")
    his_samples: int = Field(
        default=24, ge=0, le=10_000, description="history samples per point with history"
    )
    default_format: Literal["json", "zinc"] = Field(
        default="json", description="the reply format when a request asks for none"
    )
    idle_timeout: Duration = Field(
        default=5.0,
        gt=0,
        le=3600,
        description="close keep-alive connections idle this long (uvicorn's timeout_keep_alive)",
    )


class _Ops(HaystackOps):
    """hs_py's ops with a filter parse error reported as an error grid, not a 500 log."""

    async def read(self, grid: Grid) -> Grid:
        try:
            return await super().read(grid)
        except ParseError as exc:
            raise HaystackError(f"invalid filter: {exc}") from None


async def build_storage(options: HaystackServeOptions) -> InMemoryAdapter:
    """The in-memory store loaded with the synthetic portfolio and its history."""
    end = datetime.datetime.now(datetime.UTC).replace(minute=0, second=0, microsecond=0)
    data = generate(
        DataSpec(
            sites=options.sites,
            ahus_per_site=options.ahus_per_site,
            vavs_per_site=options.vavs_per_site,
            meters_per_site=options.meters_per_site,
            his_samples=options.his_samples,
            end=end,
        )
    )
    storage = InMemoryAdapter(data.entities)
    for ident, items in data.history.items():
        await storage.his_write(Ref(ident), items)
    return storage


class HaystackTarget(EmbeddedTarget):
    """haystack-py's FastAPI server with SCRAM auth and synthetic buildings."""

    name: ClassVar[str] = "haystack"
    description: ClassVar[str] = (
        "haystack-py FastAPI server (SCRAM, HTTP + WebSocket), synthetic sites"
    )
    options: ClassVar[type[StrictModel]] = HaystackServeOptions
    secret_options: ClassVar[frozenset[str]] = frozenset({"password"})

    async def serve(self, host: str, port: int, options: StrictModel, ready: Ready) -> None:
        assert isinstance(options, HaystackServeOptions)
        storage = await build_storage(options)
        password = resolve_password(options.password, options.password_env)
        app = create_fastapi_app(
            ops=_Ops(storage=storage),
            storage=storage,
            authenticator=SimpleAuthenticator(
                {options.user: password}, iterations=options.iterations
            ),
            default_format=options.default_format,
        )
        del password
        logging.getLogger("hs_py").setLevel(logging.WARNING)
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        bound_port = sock.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            http="httptools",
            ws="websockets-sansio",
            ws_max_size=16 * 1024 * 1024,
            timeout_keep_alive=options.idle_timeout,  # type: ignore[arg-type]
        )
        server = uvicorn.Server(config)
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        try:
            while not server.started:
                if task.done():
                    await task
                    return
                await asyncio.sleep(0.01)
            url_host = f"[{host}]" if ":" in host else host
            ready(
                Announcement(
                    f"http://{url_host}:{bound_port}/api",
                    f"haystack-py {version('haystack-py')} (FastAPI, uvicorn)",
                )
            )
            await asyncio.shield(task)
        except asyncio.CancelledError:
            server.should_exit = True
            await task
            raise
        finally:
            sock.close()

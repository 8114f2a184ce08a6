"""``protobench discover haystack URL`` against hs_py's Haystack server: the embedded target
(SCRAM) and the same app without an authenticator; and against werkzeug's HTTP/1.0 server,
which closes the connection after each response and writes Haystack 3 JSON. The summary, a
fitted profile that loads and runs clean, secrets kept out of it, refusals in plain words."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import tomllib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from hs_py.errors import HaystackError
from hs_py.fastapi_server import create_fastapi_app
from hs_py.grid import Grid
from hs_py.ops import HaystackOps

from protobench.targets.haystack import HaystackServeOptions, build_storage
from tests.support.cli import CliResult
from tests.support.haystack import SMALL, haystack_server
from tests.support.peers.werkzeug_haystack import werkzeug_haystack

pytestmark = pytest.mark.integration

RUN = ("--warmup", "1s", "--duration", "2s", "--json", "--quiet", "--processes", "1")


def with_server(password: str, body: Callable[[str], Any]) -> Any:
    """``body(url)`` in a thread while the embedded server (this password) serves."""

    async def serve() -> Any:
        async with haystack_server(password=password) as url:
            return await asyncio.to_thread(body, url)

    return asyncio.run(serve())


def test_discover_haystack_writes_a_profile_that_runs_clean(
    cli: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    password = "pw-" + secrets.token_hex(12)
    path = tmp_path / "hs.toml"

    def body(url: str) -> tuple[str, CliResult, CliResult]:
        found = cli(
            "discover", "haystack", url, "--write-profile", str(path),
            "--opt", "user=admin", "--opt", f"password={password}", timeout=60,
        )  # fmt: skip
        # the profile does not hold the password: the run takes it from the environment
        monkeypatch.setenv("HAYSTACK_PASSWORD", password)
        return url, found, cli("run", str(path), *RUN, timeout=120)

    url, found, result = with_server(password, body)
    assert found.returncode == 0, found.stderr
    out = found.stdout
    assert "login: SCRAM as 'admin'" in out
    assert "ops (" in out
    assert "hisRead" in out
    assert "formats: application/json (receive/send), text/zinc (receive/send)" in out
    assert "sites: 1: @" in out
    assert "points: 5+: @" in out
    assert "hisRead: yes, pointWrite: yes, watch: watchSub, watchPoll, watchUnsub" in out
    assert f"profile written to {path}" in out
    text = path.read_text()
    assert password not in text + found.stdout + found.stderr
    assert '# password = "<secret>"' in text
    assert "# $HAYSTACK_PASSWORD" in text
    assert "# [[group]]" in text  # pointWrite left for the user to enable
    profile = tomllib.loads(text)
    assert profile["target"] == url
    assert profile["options"] == {"user": "admin"}
    groups = {g["name"]: g for g in profile["group"]}
    assert set(groups) == {
        "about", "ops", "read-site", "read-equip", "read-point", "read-by-id", "nav", "his-read",
    }  # fmt: skip
    by_id = groups["read-by-id"]["filters"]
    assert len(by_id) == 11  # 1 site, 5 equips, 5 points
    assert all(f.startswith("id==@") for f in by_id)
    assert len(groups["his-read"]["points"]) == 5
    assert result.returncode == 0, result.stderr
    sustain = result.json()["phases"]["sustain"]
    assert sustain["total"]["errors"] == 0, sustain["total"]["last_errors"]
    for name in groups:
        assert sustain["ops"][name]["ok"] > 0, name
    assert password not in result.stdout + result.stderr


class NoWritableOps(HaystackOps):
    """hs_py's ops, answering an error grid to a read of writable points."""

    async def read(self, grid: Grid) -> Grid:
        if "writable" in str(grid.rows[0].get("filter", "")):
            raise HaystackError("writable: unknown tag")
        return await super().read(grid)


@contextlib.asynccontextmanager
async def open_server() -> AsyncIterator[str]:
    """hs_py's FastAPI app with no authenticator (no login) on a free loopback port."""
    storage = await build_storage(HaystackServeOptions(**SMALL))
    app = create_fastapi_app(ops=NoWritableOps(storage=storage), storage=storage)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(30):
            while not server.started:
                if task.done():
                    await task  # it stopped before it started: raise its error
                await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/api"
    finally:
        server.should_exit = True
        await task
        sock.close()


def test_discover_a_server_without_login_and_a_failing_read(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    path = tmp_path / "open.toml"

    async def serve() -> tuple[CliResult, CliResult]:
        async with open_server() as url:
            found = await asyncio.to_thread(
                cli, "discover", "haystack", url, "--write-profile", str(path), timeout=60
            )
            run = await asyncio.to_thread(cli, "run", str(path), *RUN, timeout=120)
            return found, run

    found, result = asyncio.run(serve())
    assert found.returncode == 0, found.stderr
    assert "login: none" in found.stdout
    assert "writable points: 0\n" in found.stdout  # the error grid of that read
    profile = tomllib.loads(path.read_text())
    assert profile["options"] == {"auth": False}
    assert result.returncode == 0, result.stderr
    sustain = result.json()["phases"]["sustain"]
    assert sustain["total"]["errors"] == 0, sustain["total"]["last_errors"]
    assert sustain["ops"]["read-by-id"]["ok"] > 0


def test_discover_haystack_wrong_password_is_one_line_and_exit_3(
    cli: Callable[..., CliResult],
) -> None:
    wrong = "wrong-" + secrets.token_hex(8)

    def body(url: str) -> CliResult:
        return cli("discover", "haystack", url, "--opt", f"password={wrong}", timeout=60)

    result = with_server("pw-" + secrets.token_hex(8), body)
    assert result.returncode == 3
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "login as 'admin' refused" in lines[0]
    assert wrong not in result.stderr


def test_discover_haystack_names_a_closed_port(cli: Callable[..., CliResult]) -> None:
    result = cli("discover", "haystack", "http://127.0.0.1:9/api", "--timeout", "1s", timeout=30)
    assert result.returncode == 3
    assert "discover haystack http://127.0.0.1:9/api: refused" in result.stderr
    assert "Traceback" not in result.stderr


def test_discover_haystack_names_a_missing_ca_file(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    missing = tmp_path / "no-ca.pem"
    result = cli(
        "discover", "haystack", "https://127.0.0.1:9/api", "--opt", f"ca_file={missing}",
        timeout=30,
    )  # fmt: skip
    assert result.returncode == 3
    assert f"ca_file {missing}: " in result.stderr
    assert "Traceback" not in result.stderr


def test_discover_haystack_needs_an_http_url(cli: Callable[..., CliResult]) -> None:
    result = cli("discover", "haystack", "bacnet://127.0.0.1/", timeout=30)
    assert result.returncode == 2
    expected = "discover haystack: bad URL 'bacnet://127.0.0.1/': expected a http:// or https://"
    assert expected in result.stderr


def test_discover_and_run_against_a_server_that_closes_after_each_response(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """werkzeug's HTTP/1.0 server, Haystack 3 JSON: discovery reconnects as the run does."""
    path = tmp_path / "werkzeug.toml"
    with werkzeug_haystack() as (url, app):
        found = cli(
            "discover", "haystack", url, "--opt", "auth=false", "--write-profile", str(path),
            timeout=60,
        )  # fmt: skip
        discovered = app.requests
        result = cli("run", str(path), *RUN, timeout=120)
        asked = app.requests - discovered
    assert found.returncode == 0, found.stderr
    assert "haystack server at " + url + ": test (server werkzeug)" in found.stdout
    assert 'sites: 1: @s1 "Site One"' in found.stdout
    assert 'writable points: 1: @p2 "SP"' in found.stdout
    assert result.returncode == 0, result.stderr
    sustain = result.json()["phases"]["sustain"]
    assert sustain["total"]["errors"] == 0, sustain["total"]["last_errors"]
    ok = sum(op["ok"] for op in sustain["ops"].values())
    connects = sum(op["counters"].get("connects", 0) for op in sustain["ops"].values())
    assert ok > 0
    assert connects >= ok - len(sustain["ops"]), "a connection per exchange"
    # without auth a session asks nothing before its exchanges: every request the server
    # answered during the run is one protobench counted, in some phase
    counted = sum(
        op["ok"] + op["errors"]
        for phase in result.json()["phases"].values()
        for op in phase["ops"].values()
    )
    assert asked == counted


def test_refusals_quote_the_decoded_error_grid_and_name_the_media_options(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    path = tmp_path / "zinc.toml"
    path.write_text(
        'name = "zinc"\nprotocol = "haystack"\nwarmup = "0s"\nduration = "1s"\n'
        '[options]\nauth = false\nformat = "zinc"\n[[group]]\nop = "about"\ncount = 1\n'
    )
    with werkzeug_haystack() as (url, _):
        refused = cli(
            "discover", "haystack", url, "--opt", "auth=false", "--opt", "content_type=text/plain",
            timeout=60,
        )  # fmt: skip
        run = cli("run", str(path), "--target", url, "--json", "--quiet", timeout=120)
    assert refused.returncode == 3
    line = refused.stderr.strip()
    assert "415" in line
    assert "Unsupported media type: text/plain" in line
    assert "s:Unsupported" not in line
    assert "the content_type option sets the Content-Type of request bodies" in line
    about = run.json()["phases"]["sustain"]["ops"]["about"]
    assert about["error_codes"] == {"protocol:406": about["errors"]}
    [said] = about["last_errors"].values() if isinstance(about["last_errors"], dict) else [None]
    assert said is not None
    assert "Not acceptable: text/zinc" in str(said)
    assert "s:Not" not in str(said)
    assert "format (json, zinc) the Accept" in str(said)

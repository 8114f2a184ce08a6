"""No secret reaches any output: every protocol, every place a secret can be given.

Each case runs ``protobench run`` in its own directory with secrets in URL
userinfo, credential query values, headers, options, serve options, body files
and keys, and the one-line flags (``-H 'Authorization: ...'``, ``-a``, a header
``--secret-header`` names), each a distinct ``S3CRET...`` word, then greps
everything the run and the commands after it produce: stdout (NDJSON with the
``started`` event and the report), stderr, the snapshot and log files,
``snapshots show`` and every export format, a profile ``--save-profile`` wrote
(its secrets are in its ``.headers`` file, which is theirs), and the command
lines of the processes while the run was alive.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from protobench.cli import app
from tests.support.targets import served

pytestmark = pytest.mark.integration

MARK = "S3CRET"
RUN = ("--warmup", "0s", "--duration", "1s", "--processes", "1", "--ndjson", "--quiet")
KEY = base64.b64encode(b"S3CRETkey-" + bytes(22)).decode()
"""A 32-byte Ed25519 seed: the key is the secret (its base64 is what must not leak)."""
BASIC = base64.b64encode(b"u:S3CRETbasic").decode()
"""``-a u:S3CRETbasic`` as its ``Authorization: Basic`` value."""


@dataclass
class Case:
    """One run: a profile (built-in name or TOML text) and its flags; ``serve`` a target first."""

    profile: str
    args: tuple[str, ...] = ()
    serve: str | None = None
    target: str = ""
    """The target URL pattern with ``{host}`` for the served target's host:port."""
    exit_codes: tuple[int, ...] = (0, 1)
    url: bool = False
    """The target is the run's first argument (a one-line run), not ``--target``."""


ONE_LINE = (
    "-H", "Authorization: Bearer S3CRETolhdr", "-H", "Cookie: s=S3CRETolck",
    "-H", "X-Api-Key: S3CRETolkey", "-H", "X-Signature: S3CRETolsig",
    "--secret-header", "X-Signature", "-a", "u:S3CRETbasic", "--data", "x",
    "--save-profile", "saved.toml",
)  # fmt: skip
"""A one-line run's secrets: headers named as credentials, one named by the user, ``-a``."""

HTTP_PROFILE = """\
name = "secret-http"
protocol = "http"
thresholds = []

[[group]]
name = "post"
op = "request"
count = 2
method = "POST"
path = "/"
body_file = "body.txt"

[group.headers]
Authorization = "Bearer S3CREThdr"
X-Api-Key = "S3CRETapikey"
X-Auth-Token = "S3CRETtok"
"""

CASES = {
    "http-headers-body-file": Case("profile.toml"),
    "http-userinfo-refused": Case(
        "http-get", ("--target", "http://u:S3CRETurl@127.0.0.1:9/"), exit_codes=(2,)
    ),
    "http-query-token-refused": Case(
        "http-get", ("--target", "http://127.0.0.1:9/?access_token=S3CRETq"), exit_codes=(2,)
    ),
    "ws-userinfo-query-headers": Case(
        "ws-echo",
        ("--opt", 'headers={"Authorization": "Bearer S3CRETwshdr", "Cookie": "s=S3CRETcookie"}'),
        serve="ws",
        target="ws://u:S3CRETwsurl@{host}/echo?token=S3CRETwsq",
    ),
    "mqtt-userinfo-password": Case(
        "mqtt-qos1",
        ("--opt", "password=S3CRETmqttopt"),
        serve="mqtt",
        target="mqtt://u:S3CRETmqtturl@{host}",
    ),
    "haystack-password-and-serve-password": Case(
        "haystack-http",
        ("--opt", "password=S3CRETpw", "--serve-opt", "password=S3CRETpw"),
    ),
    "beckn-private-key": Case(
        "beckn-bap",
        ("--opt", f"private_key={KEY}", "--opt", "subscriber_id=bap.test", "--opt", "key_id=k1"),
    ),
    "bacnet-sc-key-password": Case("bacnet-sc", ("--opt", "key_password=S3CRETscpw")),
    "http-one-line-headers-auth": Case(
        "",
        ONE_LINE,
        serve="http",
        target="http://{host}/one",
        url=True,
    ),
    "http-one-line-bad-header": Case(
        "http://127.0.0.1:9/", ("-H", "Authorization Bearer S3CRETbad"), exit_codes=(2,)
    ),
    "http-one-line-bad-auth": Case("http://127.0.0.1:9/", ("-a", "S3CRETnocolon"), exit_codes=(2,)),
}
"""bacnet-ip takes no secret (no credentials in BACnet/IP), so it has no case."""


def children_seen(parent: int, stop: threading.Event, seen: list[str]) -> None:
    """Collect the command lines of ``parent``'s descendants until ``stop``.

    The command the user typed is theirs; what protobench starts (workers, the
    embedded target, mosquitto) must carry no secret on its command line. A
    child caught between fork and exec still shows the parent's: not a leak.
    """
    typed: list[str] = []
    with contextlib.suppress(psutil.Error):
        typed = psutil.Process(parent).cmdline()
    while not stop.wait(0.05):
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(parent).children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    cmdline = child.cmdline()
                    if cmdline != typed:
                        seen.append(" ".join(cmdline))


def cli(cwd: Path, *args: str, ps: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m protobench ARGS`` in ``cwd``; ``ps`` collects its children's command lines."""
    process = subprocess.Popen(
        [sys.executable, "-m", "protobench", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    stop = threading.Event()
    watcher = threading.Thread(
        target=children_seen, args=(process.pid, stop, ps if ps is not None else []), daemon=True
    )
    watcher.start()
    try:
        stdout, stderr = process.communicate(timeout=120)
    finally:
        stop.set()
        watcher.join(5)
        if process.poll() is None:
            process.kill()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def files_text(root: Path) -> dict[str, str]:
    """Every file under ``root`` (gzip unpacked) as text, by path."""
    out = {}
    for path in root.rglob("*"):
        if path.is_file():
            raw = path.read_bytes()
            with contextlib.suppress(OSError):
                raw = gzip.decompress(raw) if path.suffix == ".gz" else raw
            out[str(path.relative_to(root))] = raw.decode(errors="replace")
    return out


def leaks(outputs: dict[str, str]) -> list[str]:
    """``where: word`` for each secret word found in an output."""
    found = []
    for where, text in outputs.items():
        for word in {w.rstrip(".,;'\"") for w in text.split() if MARK in w or KEY in w}:
            found.append(f"{where}: ...{word[-60:]}")
        if KEY in text:
            found.append(f"{where}: the private key")
        if BASIC in text:
            found.append(f"{where}: the basic credentials")
    return found


def run_case(case: Case, tmp_path: Path) -> dict[str, str]:
    """Run ``case`` in ``tmp_path`` (the current directory), then read every output."""
    (tmp_path / "body.txt").write_text('{"token": "S3CRETbody"}')
    (tmp_path / "profile.toml").write_text(HTTP_PROFILE)
    args = list(case.args)
    profile = case.profile
    with contextlib.ExitStack() as stack:
        if case.serve is not None:
            target = stack.enter_context(served(case.serve))
            host = target.url.split("://", 1)[1].split("/", 1)[0]
            if case.url:
                profile = case.target.format(host=host)
            else:
                args += ["--target", case.target.format(host=host)]
        seen: list[str] = []
        done = cli(tmp_path, "run", profile, *RUN, *args, ps=seen)
    assert done.returncode in case.exit_codes, done.stderr[-2000:]
    outputs = {"stdout": done.stdout, "stderr": done.stderr, "ps": "\n".join(set(seen))}
    if done.returncode in (0, 1):
        assert '"type": "started"' in done.stdout
        for command in (
            ("snapshots", "show", "latest"),
            ("snapshots", "list"),
            ("snapshots", "export", "latest", "-f", "json"),
            ("snapshots", "export", "latest", "-f", "csv"),
            ("snapshots", "export", "latest", "-f", "hlog"),
        ):
            result = CliRunner().invoke(app, list(command))
            assert result.exit_code == 0, (command, result.stderr)
            outputs[" ".join(command)] = result.stdout + result.stderr
    outputs.update(files_text(tmp_path / ".protobench"))
    if (tmp_path / "saved.toml").exists():
        outputs["saved.toml"] = (tmp_path / "saved.toml").read_text()
        assert MARK in (tmp_path / "saved.headers").read_text()  # where they went
    return outputs


@pytest.mark.parametrize("name", list(CASES))
def test_no_secret_in_any_output(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    found = leaks(run_case(CASES[name], tmp_path))
    assert not found, "secrets leaked:\n" + "\n".join(found)

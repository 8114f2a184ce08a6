"""Helpers of the MQTT tests: mosquitto on a free loopback port, session contexts, drivers.

:func:`amqtt` starts amqtt, an independent Python broker, from a venv of its own
made on first use (``.venv-peers/``), with its PUBLISH counts as the truth.

:func:`mosquitto` writes the broker's config file itself (persistence off,
one listener on 127.0.0.1) with the extra lines a test asks for, an optional
password file (made with ``mosquitto_passwd``) and an optional TLS listener.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from protobench.engine.metrics import OpRecorder
from protobench.hostutil import free_port
from protobench.protocols.base import CallbackSession, SessionContext, StrictModel
from protobench.protocols.mqtt.options import MqttOptions
from protobench.protocols.mqtt.plugin import MqttProtocol
from protobench.targets.mqtt import find_mosquitto
from protobench.vocab.errors import OpError
from tests.support.processes import peer_process
from tests.support.timing import S

FANOUT_QOS1 = """
name = "fan-qos1"
protocol = "mqtt"
[[group]]
name = "sub"
op = "subscribe"
count = 4
topics = ["t/fan/#"]
qos = 1
[[group]]
name = "pub"
op = "publish"
count = 5
every = "20ms"
topic = "t/fan/{client}"
qos = 1
size = 64
"""
"""Four QoS 1 subscribers of five publishers (every 20 ms): received = published x 4."""

MOSQUITTO = find_mosquitto()
needs_mosquitto = pytest.mark.skipif(MOSQUITTO is None, reason="mosquitto is not installed")
PLUGIN = MqttProtocol()


@dataclass
class Broker:
    """A running mosquitto: where it listens, its process, its log."""

    port: int
    proc: subprocess.Popen[bytes]
    conf: Path
    log: Path
    scheme: str = "mqtt"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(5)

    def start(self) -> None:
        """(Re)start mosquitto with the same config and port."""
        assert MOSQUITTO is not None
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [MOSQUITTO, "-c", str(self.conf)], stdout=log, stderr=log, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + 10 * S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mosquitto exited: {self.log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"mosquitto did not listen in {10 * S:.0f} s")


@contextmanager
def mosquitto(
    directory: Path,
    *extra: str,
    users: dict[str, str] | None = None,
    tls: tuple[Path, Path] | None = None,
    client_ca: Path | None = None,
) -> Iterator[Broker]:
    """mosquitto on 127.0.0.1 with a config written here; ``tls`` = (cert, key) files;
    ``client_ca``: its TLS listener requires a client certificate of that CA (mutual TLS)."""
    if MOSQUITTO is None:
        pytest.skip("mosquitto is not installed")
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    lines = ["persistence false", "log_dest stderr", "log_type error", "log_type warning"]
    if os.geteuid() == 0:
        lines.append("user root")  # else mosquitto drops to a user who cannot read tmp_path
    lines += [f"listener {port} 127.0.0.1", "allow_anonymous true"]
    if tls is not None:
        lines += [f"certfile {tls[0]}", f"keyfile {tls[1]}"]
        if client_ca is not None:
            lines += [f"cafile {client_ca}", "require_certificate true"]
    if users:
        passwd = directory / "passwd"
        passwd.touch()
        tool = shutil.which("mosquitto_passwd")
        if tool is None:
            pytest.skip("mosquitto_passwd is not installed")
        for user, password in users.items():
            subprocess.run([tool, "-b", str(passwd), user, password], check=True)
        lines.append(f"password_file {passwd}")
    lines += list(extra)
    conf = directory / "mosquitto.conf"
    conf.write_text("\n".join(lines) + "\n")
    broker = Broker(port, None, conf, directory / "mosquitto.log", "mqtts" if tls else "mqtt")  # type: ignore[arg-type]
    broker.start()
    try:
        yield broker
    finally:
        if broker.proc.poll() is None:
            broker.proc.terminate()
            try:
                broker.proc.wait(5)
            except subprocess.TimeoutExpired:
                broker.kill()


def context(
    url: str,
    op: str,
    index: int = 0,
    group: str | None = None,
    timeout: float = 5.0,
    options: dict[str, Any] | None = None,
    **params: Any,
) -> SessionContext:
    """A session context as the engine builds it (validated options and params)."""
    params_model: StrictModel = PLUGIN.operations[op].model_validate(params)
    return SessionContext(
        target=url,
        group=group or op,
        op=op,
        index=index,
        worker=0,
        params=params_model,
        options=MqttOptions.model_validate(options or {}),
        timeout=timeout,
    )


async def publish_n(session: CallbackSession, count: int) -> tuple[list[OpError], list[int]]:
    """``count`` back-to-back exchanges, re-submitted from the callback as the engine does."""
    errors: list[OpError] = []
    latencies: list[int] = []
    finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    state = {"left": count, "start": 0}

    def done(error: OpError | None, nbytes: int) -> None:
        now = time.perf_counter_ns()
        if error is not None:
            errors.append(error)
        else:
            latencies.append(now - state["start"])
        state["left"] -= 1
        if state["left"] and error is None:
            state["start"] = time.perf_counter_ns()
            session.submit(done)
        elif not finished.done():
            finished.set_result(None)

    state["start"] = time.perf_counter_ns()
    session.submit(done)
    await asyncio.wait_for(finished, 60 * S)
    return errors, latencies


async def wait_for_count(
    recorder: OpRecorder, name: str, expected: int, within: float = 10 * S
) -> int:
    """Wait until ``recorder.counters[name]`` reaches ``expected`` (or the time runs out)."""
    deadline = time.monotonic() + within
    while recorder.counters[name] < expected and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.02)
    return recorder.counters[name]


# --------------------------------------------------------------------------- amqtt, a peer

AMQTT_VERSION = "0.12.1"
PEERS = Path(__file__).resolve().parents[2] / ".venv-peers"
AMQTT_SCRIPT = Path(__file__).parent / "peers" / "amqtt_broker.py"


def amqtt_python() -> Path:
    """The Python of a cached venv with amqtt (an independent broker), made on first use.

    It lives in ``.venv-peers/`` (not the project's venv: amqtt pins a websockets
    older than ours); the test skips, saying why, when it cannot be installed.
    """
    venv = PEERS / f"amqtt-{AMQTT_VERSION}"
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if stamp.is_file():
        return python
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"amqtt=={AMQTT_VERSION}"],
            check=True,
            capture_output=True,
            timeout=600,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        pytest.skip(f"amqtt {AMQTT_VERSION} could not be installed in {venv}: {exc}")
    stamp.touch()
    return python


@dataclass
class Amqtt:
    """A running amqtt broker (TCP and WebSocket listeners) and the file its PUBLISH counts
    are written to."""

    port: int
    proc: subprocess.Popen[bytes]
    counts_file: Path
    ws_port: int = 0

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.ws_port}/mqtt"

    def counts(self) -> dict[str, dict[str, int]]:
        """The broker's own PUBLISH counts (received, sent) by the topic's first level."""
        self.counts_file.unlink(missing_ok=True)
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 10 * S
        while not self.counts_file.is_file() and time.monotonic() < deadline:
            time.sleep(0.02)
        counts: dict[str, dict[str, int]] = json.loads(self.counts_file.read_text())
        return counts


@contextmanager
def amqtt(directory: Path) -> Iterator[Amqtt]:
    """amqtt on 127.0.0.1, from its own venv (:func:`amqtt_python`)."""
    python = amqtt_python()
    port, ws_port = free_port(), free_port()
    args = [str(python), str(AMQTT_SCRIPT), str(port), str(directory / "counts.json"),
            str(ws_port)]  # fmt: skip
    with peer_process("amqtt", args, directory / "amqtt.log", (port, ws_port), 20 * S) as proc:
        yield Amqtt(port, proc, directory / "counts.json", ws_port)


# --------------------------------------------------------------------------- paho, a reference


@dataclass
class Heard:
    """The messages a paho subscriber received: topic, payload, retain flag, MQTT 5 props."""

    messages: list[tuple[str, bytes, bool, dict[str, Any]]]

    def topics(self) -> list[str]:
        return [topic for topic, _, _, _ in self.messages]


@contextmanager
def paho_listener(port: int, topic: str, qos: int = 1) -> Iterator[Heard]:
    """A paho-mqtt MQTT 5 subscriber to ``topic`` on 127.0.0.1:``port`` (subscribed on entry)."""
    import threading  # noqa: PLC0415

    import paho.mqtt.client as paho  # noqa: PLC0415
    from paho.mqtt.enums import CallbackAPIVersion  # noqa: PLC0415

    heard = Heard([])
    subscribed = threading.Event()

    def on_message(client: Any, userdata: Any, msg: Any) -> None:
        props = getattr(msg, "properties", None)
        names = ("UserProperty", "ContentType", "MessageExpiryInterval", "TopicAlias")
        found = {name: getattr(props, name) for name in names if hasattr(props, name)}
        heard.messages.append((msg.topic, msg.payload, bool(msg.retain), found))

    client = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    client.on_message = on_message
    client.on_subscribe = lambda *args: subscribed.set()
    client.connect("127.0.0.1", port)
    client.subscribe(topic, qos=qos)
    client.loop_start()
    try:
        if not subscribed.wait(10 * S):
            raise RuntimeError("paho: no SUBACK")
        yield heard
    finally:
        client.disconnect()
        client.loop_stop()


@dataclass
class Peer:
    """A broker we did not write, as the feature tests use it: its plain MQTT URL and port,
    and its own counts where it keeps them (mochi-mqtt; mosquitto: None)."""

    name: str
    url: str
    port: int
    counts: Callable[[], dict[str, Any]] | None


@contextmanager
def peer(name: str, directory: Path) -> Iterator[Peer]:
    """mosquitto or mochi-mqtt (both MQTT 5) on 127.0.0.1."""
    from tests.support.mochi import mochi  # noqa: PLC0415 - builds Go on first use

    if name == "mosquitto":
        with mosquitto(directory) as broker:
            yield Peer(name, broker.url, broker.port, None)
    else:
        with mochi(directory) as other:
            yield Peer(name, other.url("tcp"), other.ports["tcp"], other.counts)

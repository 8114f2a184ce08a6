"""Source addresses: the option's forms, which address each session connects from, and
the open-file limit note when the OS refuses to raise it."""

from __future__ import annotations

import errno
import resource

import pytest
from pydantic import ValidationError

from protobench.hostutil import fd_limit_note
from protobench.protocols.mqtt.client import map_os_error
from protobench.protocols.mqtt.options import MqttOptions
from protobench.protocols.sourceaddr import AUTO_PER_ADDRESS, loopback, source_for
from protobench.protocols.websocket.client import os_error
from protobench.protocols.websocket.options import WebSocketOptions
from protobench.vocab.errors import ErrorClass


def test_the_option_takes_a_count_a_list_or_nothing() -> None:
    assert MqttOptions().source_addresses is None
    assert MqttOptions.model_validate({"source_addresses": 4}).source_addresses == 4
    listed = WebSocketOptions.model_validate({"source_addresses": ["127.0.0.2", "[::1]"]})
    assert listed.source_addresses == ["127.0.0.2", "::1"]
    one = MqttOptions.model_validate({"source_addresses": "127.0.0.9"})
    assert one.source_addresses == ["127.0.0.9"]
    for bad in (0, [], ["localhost"], ["127.0.0.300"]):
        with pytest.raises(ValidationError):
            MqttOptions.model_validate({"source_addresses": bad})


def test_a_count_spreads_sessions_round_robin_over_loopback_addresses() -> None:
    assert [source_for(2, i, "127.0.0.1") for i in range(4)] == [
        "127.0.0.1",
        "127.0.0.2",
        "127.0.0.1",
        "127.0.0.2",
    ]
    assert loopback(255) == "127.0.1.0"
    assert source_for(["127.0.0.5", "127.0.0.6"], 3, "127.0.0.1") == "127.0.0.6"


def test_automatic_mode_changes_address_every_block_of_sessions_to_a_loopback_target() -> None:
    assert source_for(None, 0, "127.0.0.1") is None
    assert source_for(None, AUTO_PER_ADDRESS - 1, "127.0.0.1") is None
    assert source_for(None, AUTO_PER_ADDRESS, "127.0.0.1") == "127.0.0.2"
    assert source_for(None, 5 * AUTO_PER_ADDRESS + 7, "127.0.0.1") == "127.0.0.6"
    assert source_for(None, 5 * AUTO_PER_ADDRESS, "::1") is None
    assert source_for(None, 5 * AUTO_PER_ADDRESS, "broker.example") is None


def test_fd_limit_note_names_the_limit_the_os_keeps() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert fd_limit_note("mosquitto", 16) is None
    note = fd_limit_note("mosquitto", 1 << 40)  # more than any OS allows
    assert note is not None
    assert "\n" not in note
    assert note.startswith("mosquitto: the open-file limit stays")
    assert "RLIMIT_NOFILE" in note
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= soft


def test_out_of_files_or_source_ports_is_a_local_error_saying_what_to_do() -> None:
    files = OSError(errno.EMFILE, "Too many open files")
    ports = OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")
    for error in (os_error(files, "127.0.0.1", 80), map_os_error(files, "connect")):
        assert error.error_class is ErrorClass.LOCAL
        assert "RLIMIT_NOFILE" in error.detail
    for error in (os_error(ports, "127.0.0.1", 80), map_os_error(ports, "connect")):
        assert error.error_class is ErrorClass.LOCAL
        assert "source_addresses" in error.detail
    refused = os_error(OSError(errno.EHOSTUNREACH, "No route to host"), "127.0.0.1", 80)
    assert refused.error_class is ErrorClass.CONNECT

"""The MQTT plugin's options, parameters, target URLs, secrets and built-in profiles."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from protobench.profiles import loader
from protobench.protocols import registry
from protobench.protocols.mqtt.codec import V5, V311, Prop
from protobench.protocols.mqtt.options import MqttOptions, PublishParams, SubscribeParams, endpoint
from protobench.protocols.mqtt.plugin import MqttProtocol
from protobench.protocols.mqtt.sessions import connect_packet
from protobench.targets.mqtt import MqttBrokerOptions, mosquitto_config
from protobench.vocab.errors import OpError


@pytest.mark.parametrize(("given", "level"), [("3.1.1", V311), (4, V311), (5, V5), ("5.0", V5)])
def test_version_spellings(given: object, level: int) -> None:
    assert MqttOptions.model_validate({"version": given}).protocol_level == level


def test_bad_options_and_params_are_rejected() -> None:
    with pytest.raises(ValidationError):
        MqttOptions.model_validate({"version": "3"})
    with pytest.raises(ValidationError):
        MqttOptions.model_validate({"keepalive": "70000s"})
    with pytest.raises(ValidationError, match="wildcards"):
        PublishParams(topic="a/#")
    with pytest.raises(ValidationError, match=r"\{client\} and \{seq\}"):
        PublishParams(topic="a/{nope}")
    with pytest.raises(ValidationError):
        PublishParams(size=19)  # smaller than the 20-byte stamp
    with pytest.raises(ValidationError, match="outside"):
        PublishParams(sizes={10: 1.0})
    with pytest.raises(ValidationError):
        SubscribeParams(topics=[])
    with pytest.raises(ValidationError):
        PublishParams.model_validate({"qos": 3})


def test_size_mix_keys_from_toml_strings() -> None:
    assert PublishParams.model_validate({"sizes": {"64": 70, "1024": 30}}).sizes == {
        64: 70,
        1024: 30,
    }


def test_endpoints() -> None:
    plain = endpoint("mqtt://127.0.0.1:1999", MqttOptions())
    assert (plain.host, plain.port, plain.ssl_context) == ("127.0.0.1", 1999, None)
    assert endpoint("127.0.0.1", MqttOptions()).port == 1883
    tls = endpoint("mqtts://localhost", MqttOptions(insecure=True))
    assert tls.port == 8883
    assert tls.ssl_context is not None
    assert not tls.ssl_context.check_hostname
    assert endpoint("mqtt://127.0.0.1:1", MqttOptions(tls=True)).ssl_context is not None
    with pytest.raises(OpError, match="scheme"):
        endpoint("http://127.0.0.1", MqttOptions())


def test_password_is_secret() -> None:
    plugin = registry.load("mqtt")
    assert isinstance(plugin, MqttProtocol)
    assert plugin.redact({"username": "u", "password": "p"}) == {
        "username": "u",
        "password": "<secret>",
    }


@pytest.mark.parametrize(
    "name", ["mqtt-fanout", "mqtt-throughput", "mqtt-qos1", "mqtt-connections"]
)
def test_builtin_profiles_load(name: str) -> None:
    profile = loader.load(name).profile
    assert profile.protocol == "mqtt"
    assert profile.target == "embedded"


def test_fanout_profile_is_iotds_case() -> None:
    groups = {g.op: g for g in loader.load("mqtt-fanout").profile.group}
    assert groups["publish"].count == 100
    assert groups["publish"].every == pytest.approx(0.1)
    assert groups["publish"].params["size"] == 256
    assert groups["subscribe"].count == 20


def test_mosquitto_config() -> None:
    text = mosquitto_config(
        "127.0.0.1", 1884, MqttBrokerOptions(password_file="/x/pw", max_queued_messages=10)
    )
    lines = text.splitlines()
    assert "persistence false" in lines
    assert "listener 1884 127.0.0.1" in lines
    assert "allow_anonymous true" in lines
    assert "password_file /x/pw" in lines
    assert "max_queued_messages 10" in lines


def test_the_embedded_broker_queues_without_limit_and_updates_sys_every_second() -> None:
    lines = mosquitto_config("127.0.0.1", 1884, MqttBrokerOptions()).splitlines()
    # mosquitto's default of 1000 queued messages dropped QoS 1 for a busy subscriber
    assert "max_queued_messages 0" in lines
    assert "max_queued_bytes 0" in lines
    assert "sys_interval 1" in lines
    assert not any(line.startswith("max_inflight_messages") for line in lines)
    lines = mosquitto_config(
        "127.0.0.1", 1884, MqttBrokerOptions(max_inflight_messages=100)
    ).splitlines()
    assert "max_inflight_messages 100" in lines


def test_missing_ca_file_is_a_connect_error() -> None:
    with pytest.raises(OpError, match="ca_file"):
        endpoint("mqtts://127.0.0.1", MqttOptions(ca_file="/nonexistent/ca.pem"))


def test_credentials_come_from_the_url_unless_the_options_give_them() -> None:
    where = endpoint("mqtt://alice:s%40cret@127.0.0.1:1883", MqttOptions())
    packet = connect_packet(MqttOptions(), "c1", where)
    assert (packet.username, packet.password) == ("alice", b"s@cret")
    packet = connect_packet(MqttOptions(username="bob", password="pw"), "c1", where)
    assert (packet.username, packet.password) == ("bob", b"pw")


def test_a_password_without_a_user_name_sends_an_empty_user_name() -> None:
    where = endpoint("mqtt://127.0.0.1:1883", MqttOptions())
    packet = connect_packet(MqttOptions(password="pw"), "c1", where)
    assert (packet.username, packet.password) == ("", b"pw")


def test_an_mqtt5_connect_asks_for_the_maximum_packet_size() -> None:
    v5 = connect_packet(MqttOptions(version="5", max_packet_size="1MiB"), "c1")
    assert (Prop.MAXIMUM_PACKET_SIZE, 1 << 20) in v5.properties
    default = connect_packet(MqttOptions(version="5", session_expiry="10s"), "c1")
    assert default.properties == (
        (Prop.SESSION_EXPIRY_INTERVAL, 10),
        (Prop.MAXIMUM_PACKET_SIZE, 16 << 20),
    )
    assert connect_packet(MqttOptions(), "c1").properties == ()  # 3.1.1 has no properties
    with pytest.raises(ValueError, match="max_packet_size"):
        MqttOptions(max_packet_size="300MiB")

"""Client identifiers within what MQTT 3.1.1 obliges every broker to accept."""

from __future__ import annotations

import re

from protobench.protocols.mqtt.ids import client_id
from protobench.protocols.mqtt.options import MqttOptions

STRICT = re.compile(r"[0-9a-zA-Z]{1,23}")  # MQTT-3.1.3-5


def test_default_ids_are_letters_and_digits_of_at_most_23_bytes() -> None:
    prefix = MqttOptions().client_id_prefix
    groups = ["subscribe", "publish", "pub-a", "pub_a", "puba", "a" * 40, "a" * 40 + "b", "é/x"]
    ids = {client_id(prefix, group, index) for group in groups for index in (0, 7, 10**6)}
    for cid in ids:
        assert STRICT.fullmatch(cid), cid
    assert len(ids) == len(groups) * 3  # no two sessions share an id
    assert client_id(prefix, "subscribe", 0) == "pbsubscribex0"


def test_a_user_prefix_is_kept_as_given() -> None:
    cid = client_id("my-fleet/", "publish", 3)
    assert cid == "my-fleet/publishx3"

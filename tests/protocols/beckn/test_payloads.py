"""Beckn v2 bodies, ids, timestamps and the plugin's secret handling."""

from __future__ import annotations

import re
import uuid

import orjson
import pytest
from pydantic import ValidationError

from protobench.protocols.beckn.options import BecknOptions
from protobench.protocols.beckn.payloads import ACTIONS, BodyFactory, timestamp, uuid4
from protobench.protocols.beckn.plugin import BecknProtocol

REQUIRED = {"action", "bapId", "bapUri", "messageId", "timestamp", "transactionId", "version"}
RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _factory(action: str, **kwargs: object) -> BodyFactory:
    args: dict[str, object] = {
        "bap_id": "bap.test",
        "bap_uri": "http://127.0.0.1:9/bap",
        "bpp_id": "bpp.test",
        "bpp_uri": "http://127.0.0.1:8",
        "queries": ["pizza"],
    }
    args.update(kwargs)
    return BodyFactory(action, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize("action", ACTIONS)
def test_bodies_are_v2_requests_with_fresh_ids(action: str) -> None:
    factory = _factory(action)
    first, second = orjson.loads(factory()), orjson.loads(factory())
    context = first["context"]
    assert set(context) >= REQUIRED
    assert context["action"] == action
    assert context["version"] == "2.0.0"
    assert RFC3339_MS.match(context["timestamp"])
    assert ("bppId" in context) == (action != "discover")
    assert uuid.UUID(context["messageId"]).version == 4
    assert uuid.UUID(context["transactionId"]).version == 4
    assert context["messageId"] != second["context"]["messageId"]
    assert context["transactionId"] != second["context"]["transactionId"]
    assert factory.message_id == second["context"]["messageId"]
    message = first["message"]
    if action == "discover":
        assert message == {"intent": {"textSearch": "pizza"}}
    else:
        assert message["order"]["items"]
    assert ("billing" in message.get("order", {})) == (action in ("init", "confirm"))


def test_reuse_ids_repeats_one_body() -> None:
    factory = _factory("select", reuse_ids=True)
    body = factory()
    assert factory() == body
    assert factory.message_id == orjson.loads(body)["context"]["messageId"]


def test_queries_cycle_from_the_session_index_and_percent_is_safe() -> None:
    factory = _factory("discover", queries=["a 100%", "b %s", "c"], start=1)
    searches = [orjson.loads(factory())["message"]["intent"]["textSearch"] for _ in range(4)]
    assert searches == ["b %s", "c", "a 100%", "b %s"]


def test_uuid4_and_timestamp_shapes() -> None:
    ids = {uuid4() for _ in range(1000)}
    assert len(ids) == 1000
    parsed = uuid.UUID(ids.pop())
    assert parsed.version == 4
    assert parsed.variant == uuid.RFC_4122
    assert RFC3339_MS.match(timestamp())


def test_private_key_is_a_redacted_validated_secret() -> None:
    plugin = BecknProtocol()
    shown = plugin.redact({"private_key": "c2VjcmV0", "subscriber_id": "bap"})
    assert shown == {"private_key": "<secret>", "subscriber_id": "bap"}
    with pytest.raises(ValidationError, match="private key"):
        BecknOptions(private_key="not base64!!")  # type: ignore[arg-type]
    options = BecknOptions(private_key="rrNtVgyASCGlo+ebsJaA37D5CZYZVfT0JA5/vlkTeV0=")  # type: ignore[arg-type]
    assert "rrNtVgy" not in repr(options)

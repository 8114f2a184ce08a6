"""bacnet-sc plugin declarations: params, TLS configuration, the built-in profile."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from protobench.profiles import loader
from protobench.protocols import registry
from protobench.protocols.bacnet_sc.client import tls_config
from protobench.protocols.bacnet_sc.options import BacnetScOptions, BroadcastParams, UnicastParams
from protobench.protocols.bacnet_sc.plugin import BacnetScProtocol
from protobench.protocols.payloads import TaggedPayloads
from protobench.targets.bacnet_sc import node_vmac
from protobench.vocab.errors import ErrorClass, OpError


def test_registered_under_its_entry_point() -> None:
    plugin = registry.load("bacnet-sc")
    assert isinstance(plugin, BacnetScProtocol)
    assert set(plugin.operations) == {"unicast", "broadcast"}
    assert plugin.embedded_target == "bacnet-sc"
    assert plugin.redact({"key_password": "x", "ca_file": "ca.pem"}) == {
        "key_password": "<secret>",
        "ca_file": "ca.pem",
    }


def test_default_params_are_the_seed_workload() -> None:
    unicast = UnicastParams()
    assert unicast.nodes == ["02:bb:00:00:00:01", "02:bb:00:00:00:02"]
    assert [bytes.fromhex(n.replace(":", "")) for n in unicast.nodes] == [
        node_vmac(1),
        node_vmac(2),
    ]
    assert unicast.payload.entries == ((25, 0.3), (200, 0.3), (800, 0.25), (1400, 0.15))
    assert BroadcastParams().echoes == 2


def test_vmacs_and_sizes_are_checked() -> None:
    assert UnicastParams(nodes=["02-BB-00-00-00-09"]).nodes == ["02:bb:00:00:00:09"]
    with pytest.raises(ValidationError, match="6 bytes"):
        UnicastParams(nodes=["02:bb"])
    with pytest.raises(ValidationError, match="VMAC"):
        UnicastParams(nodes=["zz:bb:00:00:00:01"])
    with pytest.raises(ValidationError, match="exceeds the maximum of 1492 B"):
        UnicastParams.model_validate({"payload": 1493})
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        BroadcastParams(echoes=0)
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        UnicastParams(inflight=0)


def test_tls_config_from_url_fragment_and_options(tmp_path: Path) -> None:
    assert tls_config("ws://127.0.0.1:1", BacnetScOptions()).allow_plaintext
    with pytest.raises(OpError, match="mutual TLS: set cert_file, key_file and ca_file") as info:
        tls_config("wss://127.0.0.1:1", BacnetScOptions())
    assert info.value.error_class is ErrorClass.CONNECT
    url = "wss://127.0.0.1:1#ca_file=/d/ca.pem&cert_file=/d/client.pem&key_file=/d/client.key"
    config = tls_config(url, BacnetScOptions())
    assert (config.ca_certificates_path, config.certificate_path, config.private_key_path) == (
        "/d/ca.pem",
        "/d/client.pem",
        "/d/client.key",
    )
    config = tls_config(url, BacnetScOptions(ca_file="/mine/ca.pem", key_password="pw"))
    assert config.ca_certificates_path == "/mine/ca.pem"
    assert config.key_password == "pw"
    with pytest.raises(OpError, match="wss://"):
        tls_config("http://127.0.0.1:1", BacnetScOptions())


def test_builtin_profile_bacnet_sc() -> None:
    profile = loader.load("bacnet-sc").profile
    assert profile.protocol == "bacnet-sc"
    assert (profile.warmup, profile.duration) == (5.0, 30.0)
    assert profile.thresholds == ("error_rate <= 0%",)
    assert profile.serve == {"tls": True, "nodes": 2}
    unicast, broadcast = profile.group
    assert (unicast.op, unicast.count, unicast.every) == ("unicast", 8, None)
    assert (broadcast.op, broadcast.count, broadcast.every) == ("broadcast", 2, 0.5)
    # bac-py's shape: the 8 unicast workers share one stress node, 8 echoes in flight on it
    assert UnicastParams.model_validate(unicast.params).inflight == 8
    assert BroadcastParams.model_validate(broadcast.params).inflight == 2
    mix = UnicastParams.model_validate(unicast.params).payload
    payloads = TaggedPayloads(0, mix)
    sizes = Counter(len(payloads.build(seq)) for seq in range(1000))
    assert sizes == {25: 300, 200: 300, 800: 250, 1400: 150}

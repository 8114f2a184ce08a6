"""The http plugin's models, redaction and built-in profile; the target's pure parts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from protobench.engine.plan import Overrides, resolve
from protobench.hostutil import is_loopback_host
from protobench.profiles import loader
from protobench.protocols import registry
from protobench.protocols.http.options import HttpOptions, RequestParams
from protobench.protocols.http.plugin import HttpProtocol
from protobench.targets import registry as targets
from protobench.targets.http import HttpTargetOptions, encode_response


def test_plugin_is_registered_with_its_embedded_target() -> None:
    plugin = registry.load("http")
    assert isinstance(plugin, HttpProtocol)
    assert set(plugin.operations) == {"request"}
    assert plugin.embedded_target == "http"
    assert targets.load("http").name == "http"


def test_request_params_defaults_and_normalisation() -> None:
    params = RequestParams(method="post", body="x")
    assert params.method == "POST"
    assert params.path is None
    assert params.headers == {}
    assert params.expect_status is None


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"body": "a", "body_file": __file__}, "body or body_file"),
        ({"body_file": "/nonexistent/body.json"}, "not a readable file"),
        ({"expect_status": []}, "at least one status"),
        ({"expect_status": [200, 700]}, "between 100 and 599"),
        ({"headers": {"X": "a\nb"}}, "line breaks"),
        ({"path": "/a b"}, "spaces"),
        ({"path": "http://other.example/x"}, "not a URL"),
        ({"path": "//other.example/x"}, "not a URL"),
        ({"path": "/x#frag"}, "fragment"),
        ({"methd": "GET"}, "Extra inputs are not permitted"),
    ],
)
def test_request_params_errors(params: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RequestParams(**params)  # type: ignore[arg-type]


def test_a_target_whose_path_cannot_be_sent_is_refused_at_plan_time() -> None:
    HttpProtocol().check_target("http://127.0.0.1:8080/big.bin")
    with pytest.raises(ValueError, match="spaces"):
        HttpProtocol().check_target("http://127.0.0.1:8080/big file.bin")


def test_body_file_is_checked_not_read(tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    body.write_text('{"marker": 1}')
    params = RequestParams(method="POST", body_file=str(body))
    assert params.body_file == str(body)
    assert "marker" not in json.dumps(params.model_dump())


def test_options_key_file_needs_cert_file() -> None:
    with pytest.raises(ValidationError, match="key_file needs cert_file"):
        HttpOptions(key_file="k.pem")
    assert HttpOptions().secret_headers == []


def test_redact_hides_secret_header_values() -> None:
    plugin = HttpProtocol()
    params = {
        "method": "GET",
        "headers": {
            "Authorization": "Bearer x",
            "COOKIE": "s=1",
            "X-Auth-Token": "t",
            "X-Custom": "c",
            "Accept": "text/plain",
        },
    }
    redacted = plugin.redact(params)
    assert redacted["headers"] == {
        "Authorization": "<secret>",
        "COOKIE": "<secret>",
        "X-Auth-Token": "<secret>",
        "X-Custom": "c",
        "Accept": "text/plain",
    }
    assert params["headers"]["Authorization"] == "Bearer x"  # type: ignore[index]
    custom = plugin.redact(params, options={"secret_headers": ["x-custom"]})
    assert custom["headers"]["X-Custom"] == "<secret>"
    assert custom["headers"]["Accept"] == "text/plain"


def test_redacted_plan_has_no_secret(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        'name = "t"\nprotocol = "http"\n[[group]]\nop = "request"\n'
        '[group.headers]\nAuthorization = "Bearer hunter2"\n'
    )
    plan = resolve(loader.load(str(profile)), Overrides(target="http://127.0.0.1:9/"))
    text = json.dumps(plan.redacted())
    assert "hunter2" not in text
    assert "<secret>" in text


def test_builtin_http_get_profile() -> None:
    loaded = loader.load("http-get")
    profile = loaded.profile
    settings = profile.settings()
    assert profile.protocol == "http"
    assert settings.target == "embedded"
    assert (settings.warmup, settings.duration) == (2.0, 10.0)
    assert settings.thresholds == ("error_rate < 0.5%",)
    (group,) = profile.group
    assert (group.name, group.op, group.count) == ("get", "request", 50)
    assert group.params == {"method": "GET"}
    plan = resolve(loaded, Overrides())
    assert plan.embedded == "http"
    assert plan.sessions == 50


def test_target_options_parse_durations() -> None:
    options = HttpTargetOptions(delay="5ms", stall_at="2s", stall_for="500ms")  # type: ignore[arg-type]
    assert options.delay == pytest.approx(0.005)
    assert options.stall_at == 2.0
    assert options.stall_for == 0.5
    with pytest.raises(ValidationError):
        HttpTargetOptions(status=99)


def test_encoded_response_sizes() -> None:
    response = encode_response(200, 13)
    assert response.startswith(b"HTTP/1.1 200 OK\r\n")
    assert response.endswith(b"Content-Length: 13\r\n\r\nHello, World!")
    big = encode_response(503, 1000)
    head, body = big.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 503 Service Unavailable")
    assert len(body) == 1000
    assert encode_response(204, 13).endswith(b"\r\n\r\n")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("192.168.1.1", False),
        ("example.org", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback

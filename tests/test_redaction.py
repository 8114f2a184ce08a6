"""The one redaction rule: URL passwords, credential query values, secret names."""

from __future__ import annotations

from protobench.redaction import SECRET, is_secret_name, redact_text, redact_url, redact_value


def test_url_password_hidden_user_and_port_kept() -> None:
    assert redact_url("mqtt://u:hunter2@127.0.0.1:1883/x") == f"mqtt://u:{SECRET}@127.0.0.1:1883/x"
    assert redact_url("wss://u:p%40ss@[::1]:8443/") == f"wss://u:{SECRET}@[::1]:8443/"


def test_url_without_secret_unchanged() -> None:
    for url in ("http://127.0.0.1:8080/big.bin", "mqtt://user@127.0.0.1", "udp://127.0.0.1:47808"):
        assert redact_url(url) == url


def test_credential_query_values_hidden() -> None:
    out = redact_url("http://127.0.0.1/a?access_token=abc123&page=2")
    assert "abc123" not in out
    assert "page=2" in out


def test_text_with_urls() -> None:
    text = "cannot connect to mqtt://bob:s3cr3t@127.0.0.1:1883 (refused)"
    assert "s3cr3t" not in redact_text(text)
    assert "bob" in redact_text(text)


def test_names() -> None:
    for name in ("password", "private_key", "api-key", "X-Auth-Token", "Authorization", "key"):
        assert is_secret_name(name), name
    for name in ("key_id", "subscriber_id", "secret_headers", "objects", "keepalive"):
        assert not is_secret_name(name), name


def test_structured_values() -> None:
    data = {"target": "ws://a:b@127.0.0.1/", "options": {"password": "pw", "qos": 1}, "l": ["x"]}
    out = redact_value(data)
    assert out == {
        "target": f"ws://a:{SECRET}@127.0.0.1/",
        "options": {"password": SECRET, "qos": 1},
        "l": ["x"],
    }


def test_text_with_credential_query_values() -> None:
    text = "bad URL 'http://127.0.0.1:8080/?access_token=abc123&page=2': put the query in the path"
    out = redact_text(text)
    assert "abc123" not in out
    assert "page=2" in out
    assert out.endswith("': put the query in the path")


def test_text_with_an_unparseable_url_still_hides_the_password() -> None:
    out = redact_text("mqtt://u:s3cr3t@[not-an-ip:1883 refused")
    assert "s3cr3t" not in out


def test_pointers_to_secrets_and_flags_are_not_secrets() -> None:
    for name in ("password_env", "private_key_env", "password_file", "key_path"):
        assert not is_secret_name(name), name
    data = {"auth": True, "password_env": "HAYSTACK_PASSWORD", "password": "pw", "pin": None}
    assert redact_value(data) == {
        "auth": True,
        "password_env": "HAYSTACK_PASSWORD",
        "password": SECRET,
        "pin": None,
    }

"""The HTTP client's pure parts: URLs, request encoding, TLS contexts, status errors."""

from __future__ import annotations

import ssl

import pytest

from protobench.protocols.http.client import (
    Endpoint,
    build_request,
    join_path,
    make_ssl_context,
    parse_url,
    status_error,
)
from protobench.vocab.errors import ErrorClass


def test_parse_url_defaults_and_base_path() -> None:
    assert parse_url("http://127.0.0.1") == Endpoint("http", "127.0.0.1", 80, "", False)
    assert parse_url("https://example.org/api/") == Endpoint(
        "https", "example.org", 443, "/api", True
    )
    assert parse_url("HTTP://[::1]:8080/x") == Endpoint("http", "::1", 8080, "/x", False)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://127.0.0.1/", "http:// or https://"),
        ("127.0.0.1:8080", "http:// or https://"),
        ("http:///x", "no host"),
        ("http://127.0.0.1:99999/", "bad URL"),
        ("http://127.0.0.1/?q=1", "query"),
        ("http://u:p@127.0.0.1/", "credentials"),
    ],
)
def test_parse_url_rejects_with_a_clear_message(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_url(url)


def test_get_request_is_minimal_and_exact() -> None:
    endpoint = parse_url("http://127.0.0.1:8080/")
    assert build_request("GET", endpoint, "/", {}) == (
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
    )


def test_post_request_carries_its_body_and_length() -> None:
    endpoint = parse_url("https://example.org/api")
    request = build_request(
        "POST", endpoint, "/items?x=1", [("Content-Type", "application/json")], b'{"a":1}'
    )
    assert request == (
        b"POST /api/items?x=1 HTTP/1.1\r\nHost: example.org\r\n"
        b"Content-Type: application/json\r\nContent-Length: 7\r\n\r\n"
        b'{"a":1}'
    )
    empty_post = build_request("POST", endpoint, "/", {})
    assert b"Content-Length: 0\r\n" in empty_post


@pytest.mark.parametrize(
    ("target_path", "path", "request_target"),
    [
        ("", None, "/"),
        ("/", None, "/"),
        ("/big.bin", None, "/big.bin"),
        ("/big.bin", "", "/big.bin"),
        ("/api/", None, "/api/"),
        ("/api/", "items", "/api/items"),
        ("/api", "items", "/items"),
        ("/api/v1/", "../v2/x", "/api/v2/x"),
        ("/api/", "/items", "/items"),
        ("/big.bin", "?q=1", "/big.bin?q=1"),
        ("/", "/", "/"),
        ("", "a/b?x=1&y=2", "/a/b?x=1&y=2"),
    ],
)
def test_join_path_requests_the_target_path_and_resolves_a_path_by_rfc3986(
    target_path: str, path: str | None, request_target: str
) -> None:
    assert join_path(target_path, path) == request_target


def test_a_request_target_outside_the_base_is_sent_as_is() -> None:
    endpoint = parse_url("http://127.0.0.1:8080/api")
    assert build_request("GET", endpoint, "/big.bin", {}, under_base=False).startswith(
        b"GET /big.bin HTTP/1.1\r\n"
    )


def test_host_header_can_be_given_and_ipv6_is_bracketed() -> None:
    endpoint = parse_url("http://[::1]:9000/")
    assert b"Host: [::1]:9000\r\n" in build_request("GET", endpoint, "/", {})
    given = build_request("GET", endpoint, "/", {"host": "example.org"})
    assert given.count(b"ost:") == 1
    assert b"host: example.org\r\n" in given


@pytest.mark.parametrize(
    ("method", "path", "headers", "message"),
    [
        ("GE T", "/", {}, "method"),
        ("GET", "x", {}, "absolute path"),
        ("GET", "/a b", {}, "absolute path"),
        ("GET", "/", {"X-A": "1\r\nX-Injected: 1"}, "line breaks"),
        ("GET", "/", {"Bad Name": "1"}, "header name"),
        ("POST", "/", {"Content-Length": "5"}, "Content-Length"),
        ("POST", "/", {"Transfer-Encoding": "chunked"}, "Transfer-Encoding"),
    ],
)
def test_request_framing_is_protected(
    method: str, path: str, headers: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build_request(method, parse_url("http://127.0.0.1/"), path, headers)


def test_ssl_context_verifies_by_default() -> None:
    ctx = make_ssl_context(False, None, None, None)
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.check_hostname
    insecure = make_ssl_context(True, None, None, None)
    assert insecure.verify_mode == ssl.CERT_NONE
    assert not insecure.check_hostname


def test_ssl_context_key_without_cert_is_rejected() -> None:
    with pytest.raises(ValueError, match="key_file needs cert_file"):
        make_ssl_context(False, None, None, "/nonexistent.key")


def test_status_error_is_a_protocol_error_coded_by_status() -> None:
    error = status_error(503)
    assert error.error_class is ErrorClass.PROTOCOL
    assert error.code == "503"
    assert error.detail == "Service Unavailable"
    assert status_error(599).code == "599"

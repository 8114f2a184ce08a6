"""What other Haystack servers need: versioned grids, framing options, quoted refusals, SCRAM.

The SCRAM proof is checked against RFC 7677's SCRAM-SHA-256 example; the
salted-password cache and its thread are checked by counting derivations.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading

import orjson
import pytest
from hs_py.encoding import json as hs_json
from hs_py.encoding import zinc as hs_zinc
from hs_py.grid import Grid
from pydantic import ValidationError

from protobench.protocols.haystack import scram_proof
from protobench.protocols.haystack.grids import error_text
from protobench.protocols.haystack.options import HaystackOptions, ReadParams
from protobench.protocols.haystack.plugin import HaystackProtocol
from protobench.protocols.haystack.requests import (
    Framing,
    http_request,
    request_grids,
    ws_template,
)
from protobench.protocols.haystack.scram_proof import ServerFirst, proof
from protobench.protocols.haystack.sessions.http import refusal
from protobench.protocols.http.client import Response, parse_url
from protobench.vocab.errors import ErrorClass

ENDPOINT = parse_url("http://127.0.0.1:8080/api")
READ = request_grids("read", ReadParams(), [])[0]

# RFC 7677 section 3: user "user", password "pencil"
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
CLIENT_FIRST_BARE = f"n=user,r={CLIENT_NONCE}"
SERVER_FIRST = (
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
CLIENT_FINAL = (
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _body(raw: bytes) -> dict[str, object]:
    body = orjson.loads(raw.partition(b"\r\n\r\n")[2])
    assert isinstance(body, dict)
    return body


def test_json_request_grids_carry_meta_ver() -> None:
    assert _body(http_request(ENDPOINT, READ, Framing(), None))["meta"] == {"ver": "3.0"}
    message = orjson.loads(ws_template(READ) % 7)
    assert message["grid"]["meta"] == {"ver": "3.0"}
    zinc = http_request(ENDPOINT, READ, Framing("zinc"), None).partition(b"\r\n\r\n")[2]
    assert zinc.startswith(b'ver:"3.0"\n')
    assert zinc.count(b"ver:") == 1


def test_content_type_and_headers_options_frame_every_request() -> None:
    options = HaystackOptions(content_type="application/json", headers={"X-Site": "north"})
    raw = http_request(ENDPOINT, READ, Framing.of(options), "tok")
    head = raw.partition(b"\r\n\r\n")[0].split(b"\r\n")
    assert b"Content-Type: application/json" in head
    assert b"X-Site: north" in head
    default = http_request(ENDPOINT, READ, Framing(), None)
    assert b"Content-Type: application/json; charset=utf-8\r\n" in default


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"headers": {"Content-Type": "text/plain"}}, "content_type option"),
        ({"headers": {"X-A": "1\r\nX-B: 2"}}, "line breaks"),
        ({"content_type": "application/json\r\nX-B: 2"}, "line breaks"),
    ],
)
def test_framing_options_are_checked(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        HaystackOptions(**options)


def test_secret_headers_are_redacted() -> None:
    redacted = HaystackProtocol().redact({"headers": {"X-Api-Key": "k3y", "X-Site": "north"}})
    assert redacted["headers"] == {"X-Api-Key": "<secret>", "X-Site": "north"}


@pytest.mark.parametrize(
    ("body", "text"),
    [
        (bytes(hs_json.encode_grid(Grid.make_error("unknown op: frob"))), "unknown op: frob"),
        (str(hs_zinc.encode_grid(Grid.make_error("no such point"))).encode(), "no such point"),
        (b'{"error":"unknown op: about"}', "unknown op: about"),
        (b"<html>\n  Not   Found\n</html>", "<html> Not Found </html>"),
        (b"", ""),
    ],
)
def test_error_text_quotes_the_server(body: bytes, text: str) -> None:
    assert error_text(body) == text


def test_refusal_maps_statuses_and_quotes_the_error_grid() -> None:
    grid = bytes(hs_json.encode_grid(Grid.make_error("filter parse error")))
    error = refusal(Response(400, "Bad Request", [], grid, len(grid)), "read")
    assert (error.error_class, error.code) == (ErrorClass.PROTOCOL, "400")
    assert error.detail == "read: filter parse error"
    assert refusal(Response(503, "", [], b"", 0)).detail == "Service Unavailable"
    denied = refusal(Response(403, "Forbidden", [], b"", 0))
    assert (denied.error_class, denied.detail) == (ErrorClass.AUTH, "token rejected")


def test_scram_proof_matches_rfc7677() -> None:
    first = ServerFirst.parse(SERVER_FIRST, CLIENT_NONCE)
    assert first.iterations == 4096
    salted = scram_proof.derive("SHA-256", "pencil", first)
    final = proof("SHA-256", salted, CLIENT_FIRST_BARE, SERVER_FIRST, first.nonce)
    assert final.client_final == CLIENT_FINAL
    final.verify(SERVER_FINAL)
    with pytest.raises(ValueError, match="signature"):
        final.verify("v=" + "A" * 44)


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ("r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce"),
        (f"r={CLIENT_NONCE}x,s=,i=4096", "iterations and a salt"),
        (f"r={CLIENT_NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=lots", "salt and iteration"),
        (f"r={CLIENT_NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=0", "0 iterations"),
    ],
)
def test_bad_server_first_is_named(message: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        ServerFirst.parse(message, CLIENT_NONCE)


@pytest.mark.anyio
async def test_salted_password_is_derived_once_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scram_proof, "_salted", {})
    threads: list[int] = []
    real = hashlib.pbkdf2_hmac

    def counting(name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
        threads.append(threading.get_ident())
        return real(name, password, salt, iterations)

    monkeypatch.setattr(hashlib, "pbkdf2_hmac", counting)
    first = ServerFirst.parse(SERVER_FIRST, CLIENT_NONCE)
    results = await asyncio.gather(
        *(scram_proof.salted_password("SHA-256", "pencil", first) for _ in range(5))
    )
    assert len(set(results)) == 1
    assert await scram_proof.salted_password("SHA-256", "pencil", first) == results[0]
    assert len(threads) == 1
    assert threads[0] != threading.get_ident()
    other = await scram_proof.salted_password("SHA-256", "not-pencil", first)
    assert other != results[0]
    assert len(threads) == 2

"""The Haystack SCRAM-SHA-256 login over a protobench HTTP connection.

Three exchanges on ``GET {api}/about`` (Project Haystack "Auth"):

1. ``Authorization: HELLO username=<base64url(user)>`` -> 401 with
   ``WWW-Authenticate: SCRAM hash=SHA-256, handshakeToken=<t1>``;
2. ``SCRAM handshakeToken=<t1>, data=<base64url(client-first)>`` -> 401 with
   the server-first message;
3. ``SCRAM handshakeToken=<t2>, data=<base64url(client-final)>`` -> 200 with
   ``Authentication-Info: authToken=<token>, data=<base64url(v=signature)>``.

The client-first message (nonce) is hs_py's; the proof and the server
signature check are :mod:`.scram_proof`'s, which derives the salted password
(PBKDF2) once per salt and iteration count in a thread, off the event loop, so
an ``auth`` operation times the server's handshake, not the client's PBKDF2.
Every failure is an ``auth`` :class:`OpError` whose detail quotes the server
(status and its error grid's ``dis`` or body) or says which check failed; the
password never appears in any message. ``headers`` are sent with every step.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

from hs_py.auth import scram_client_first

from protobench.protocols.haystack.grids import error_text
from protobench.protocols.haystack.scram_proof import HASHES, ServerFirst, proof, salted_password
from protobench.protocols.http.client import Endpoint, Fetcher, Response, build_request
from protobench.vocab.errors import ErrorClass, OpError

Headers = Sequence[tuple[str, str]]


def b64url(data: bytes) -> str:
    """base64url without padding, as Haystack auth headers use."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Inverse of :func:`b64url` (padding optional)."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def header_params(value: str) -> dict[str, str]:
    """``key=value`` pairs of an auth header, after an optional scheme word."""
    scheme, _, rest = value.strip().partition(" ")
    text = value if "=" in scheme else rest
    params = {}
    for pair in text.split(","):
        key, sep, val = pair.strip().partition("=")
        if sep:
            params[key.strip()] = val.strip()
    return params


def bearer(token: str) -> str:
    """The ``Authorization`` value of the fast path."""
    return f"BEARER authToken={token}"


async def login(
    conn: Fetcher, endpoint: Endpoint, user: str, password: str, headers: Headers = ()
) -> tuple[str, int]:
    """Run the handshake on ``conn``; return ``(auth token, bytes received)``.

    The handshake's state is the server's tokens, not the connection: a
    :class:`~protobench.protocols.http.client.Reconnecting` connection may take
    each step on a new one.

    Raises ``OpError(auth)`` when the server or a check refuses the login.
    """
    hello = await _get(conn, endpoint, f"HELLO username={b64url(user.encode())}", headers)
    if hello.status == 200:
        info = header_params(_header(hello, "authentication-info"))
        return info.get("authToken", ""), hello.nbytes
    challenge = _expect(hello, 401, "HELLO")
    token = challenge.get("handshakeToken")
    if not token:
        raise OpError(
            ErrorClass.AUTH,
            f"HELLO for user {user!r} rejected: {_quote(hello)}",
            code=str(hello.status),
        )
    first = scram_client_first(user)
    step1 = await _get(
        conn,
        endpoint,
        f"SCRAM handshakeToken={token}, data={b64url(first.client_first_msg.encode())}",
        headers,
    )
    server_first = _expect(step1, 401, "SCRAM client-first")
    hash_name = server_first.get("hash", "SHA-256")
    try:
        if hash_name not in HASHES:
            raise ValueError(f"unsupported hash {hash_name!r}")
        message = b64url_decode(server_first.get("data", "")).decode("utf-8")
        fields = ServerFirst.parse(message, first.c_nonce)
    except ValueError as exc:
        raise OpError(ErrorClass.AUTH, f"SCRAM server-first rejected: {exc}") from None
    salted = await salted_password(hash_name, password, fields)
    final = proof(hash_name, salted, first.client_first_bare, message, fields.nonce)
    token = server_first.get("handshakeToken", token)
    step2 = await _get(
        conn,
        endpoint,
        f"SCRAM handshakeToken={token}, data={b64url(final.client_final.encode())}",
        headers,
    )
    if step2.status != 200:
        raise OpError(
            ErrorClass.AUTH, f"login as {user!r} refused: {_quote(step2)}", code=str(step2.status)
        )
    info = header_params(_header(step2, "authentication-info"))
    auth_token = info.get("authToken")
    if not auth_token:
        raise OpError(ErrorClass.AUTH, "login: no authToken in Authentication-Info")
    try:
        final.verify(b64url_decode(info.get("data", "")).decode("utf-8"))
    except ValueError as exc:
        raise OpError(ErrorClass.AUTH, f"login: {exc}") from None
    return auth_token, hello.nbytes + step1.nbytes + step2.nbytes


async def _get(conn: Fetcher, endpoint: Endpoint, authorization: str, headers: Headers) -> Response:
    request = build_request("GET", endpoint, "/about", [*headers, ("Authorization", authorization)])
    return await conn.fetch(request)


def _header(response: Response, name: str) -> str:
    value = response.header(name)
    return value.decode("latin-1") if value is not None else ""


def _expect(response: Response, status: int, step: str) -> dict[str, str]:
    if response.status != status:
        raise OpError(
            ErrorClass.AUTH,
            f"{step}: expected {status}, got {_quote(response)}",
            code=str(response.status),
        )
    return header_params(_header(response, "www-authenticate"))


def _quote(response: Response) -> str:
    """``403 Authentication failed``: the status and its error grid's dis or body text."""
    return f"{response.status} {error_text(response.body) or response.reason}".strip()

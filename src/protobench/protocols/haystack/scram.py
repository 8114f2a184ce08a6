"""The Haystack SCRAM-SHA-256 login over a protobench HTTP connection.

Three exchanges on ``GET {api}/about`` (Project Haystack "Auth"):

1. ``Authorization: HELLO username=<base64url(user)>`` -> 401 with
   ``WWW-Authenticate: SCRAM hash=SHA-256, handshakeToken=<t1>``;
2. ``SCRAM handshakeToken=<t1>, data=<base64url(client-first)>`` -> 401 with
   the server-first message;
3. ``SCRAM handshakeToken=<t2>, data=<base64url(client-final)>`` -> 200 with
   ``Authentication-Info: authToken=<token>, data=<base64url(v=signature)>``.

The SCRAM messages themselves (nonce, PBKDF2, proof, server signature check)
are hs_py's :mod:`hs_py.auth` helpers. Every failure is an ``auth``
:class:`OpError` whose detail quotes the server (status and body) or says
which check failed; the password never appears in any message. PBKDF2 runs on
the event loop: with the embedded server's 4096 iterations it costs about a
millisecond, which is part of what an ``auth`` operation measures.
"""

from __future__ import annotations

import base64

from hs_py.auth import scram_client_final, scram_client_first, verify_server_signature
from hs_py.errors import AuthError

from protobench.protocols.base import ErrorClass, OpError
from protobench.protocols.http_client import Endpoint, HttpConnection, Response, build_request


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
    conn: HttpConnection, endpoint: Endpoint, user: str, password: str
) -> tuple[str, int]:
    """Run the handshake on ``conn``; return ``(auth token, bytes received)``.

    Raises ``OpError(auth)`` when the server or a check refuses the login.
    """
    hello = await _get(conn, endpoint, f"HELLO username={b64url(user.encode())}")
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
    )
    server_first = _expect(step1, 401, "SCRAM client-first")
    try:
        final = scram_client_final(
            password,
            first,
            b64url_decode(server_first.get("data", "")).decode("utf-8"),
            server_first.get("hash", "SHA-256"),
        )
    except (AuthError, ValueError) as exc:
        raise OpError(ErrorClass.AUTH, f"SCRAM server-first rejected: {exc}") from None
    token = server_first.get("handshakeToken", token)
    step2 = await _get(
        conn,
        endpoint,
        f"SCRAM handshakeToken={token}, data={b64url(final.client_final_msg.encode())}",
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
        verify_server_signature(final, b64url_decode(info.get("data", "")).decode("utf-8"))
    except (AuthError, ValueError) as exc:
        raise OpError(ErrorClass.AUTH, f"login: {exc}") from None
    return auth_token, hello.nbytes + step1.nbytes + step2.nbytes


async def _get(conn: HttpConnection, endpoint: Endpoint, authorization: str) -> Response:
    request = build_request("GET", endpoint, "/about", {"Authorization": authorization})
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
    """``403 Authentication failed``: the status and the start of the server's message."""
    text = response.body[:200].decode("utf-8", "replace").strip()
    return f"{response.status} {text or response.reason}".strip()

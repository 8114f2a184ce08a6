"""The one redaction rule for every place a URL, option or message is stored or printed.

A secret is a URL's password (``scheme://user:PASSWORD@host``), the value of a
query parameter whose name is a credential (``?token=...``, ``access_key=``,
``password=``...), or the value of an option or header named as one. Every
place that stores or prints a target URL, an override, an error message or a
log line passes it through these functions; nothing of ours is imported here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SECRET = "<secret>"

CREDENTIAL_WORDS = ("password", "passwd", "secret", "token", "apikey", "api_key", "private")
"""Parts of a name that mark its value as a secret (compared lower-case)."""

_CREDENTIAL_NAMES = frozenset({"key", "pass", "pwd", "auth", "authorization", "cookie"})
_NAME_LISTS = frozenset({"secret_headers", "secret_options"})
_POINTERS = ("_env", "_file", "_path")
"""Name endings that say where a secret is (a variable, a file), not what it is."""

_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/@\s'\"]*)@")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")


def is_secret_name(name: str) -> bool:
    """Whether an option, header or query parameter named ``name`` holds a secret."""
    lowered = name.lower()
    if lowered in _NAME_LISTS or lowered.endswith(_POINTERS):
        return False
    if lowered in _CREDENTIAL_NAMES or lowered.endswith(("_key", "-key")):
        return True
    return any(word in lowered for word in CREDENTIAL_WORDS)


def redact_url(url: str) -> str:
    """``url`` with its password and credential query values replaced by ``<secret>``.

    The user name stays (it says who logged in); a URL that cannot be parsed is
    returned with any ``user:password@`` part hidden by :func:`redact_text`.
    """
    try:
        parts = urlsplit(url)
        password = parts.password
        hostname = parts.hostname
        port = parts.port
    except ValueError:
        return _hide_userinfo(url)
    netloc = parts.netloc
    if password is not None:
        host = hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = f"{parts.username}:{SECRET}@{host}"
        if port is not None:
            netloc += f":{port}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_name(k) for k, _ in pairs):
            query = urlencode([(k, SECRET if is_secret_name(k) else v) for k, v in pairs])
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def redact_text(text: str) -> str:
    """``text`` (an error message, a log line) with every URL in it as :func:`redact_url` has it."""
    return _URL.sub(lambda match: redact_url(match.group(0)), text)


def _hide_userinfo(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@`` hidden."""

    def hide(match: re.Match[str]) -> str:
        userinfo = match.group("userinfo")
        if ":" not in userinfo:
            return match.group(0)
        user = userinfo.split(":", 1)[0]
        return f"{match.group('scheme')}{user}:{SECRET}@"

    return _URL_USERINFO.sub(hide, text)


def redact_value(value: Any) -> Any:
    """A structured value with URL passwords hidden in every string and secret keys replaced.

    A flag under a secret name (``auth = true``) says nothing secret and stays.
    """
    if isinstance(value, str):
        return redact_url(value) if "://" in value else value
    if isinstance(value, Mapping):
        return {
            k: (
                SECRET
                if isinstance(k, str) and is_secret_name(k) and not isinstance(v, bool | None)
                else redact_value(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value

"""The profile of a URL run: ``protobench run http://HOST/PATH -H ... -m POST ...``.

:func:`url_profile` builds a one-group profile for the URL's protocol (its
:class:`~protobench.protocols.flags.OneLine`) from the one-line flags given,
validates it as any profile is validated, and returns it loaded; an error about
a value names the flag that gave it. The profile's text (and hash) is its TOML
with every secret replaced, so nothing secret is hashed or kept.
:func:`saved_profile` is the same profile as files to keep: the profile, with
the run settings given on the command line as its keys, and the secret headers
in a headers file of their own (referenced by ``headers_file``) that only its
owner may read; loaded again it gives the same plan.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from protobench.profiles import loader, writer
from protobench.profiles.loader import LoadedProfile, ProfileError
from protobench.profiles.model import check_name
from protobench.protocols import registry
from protobench.protocols.base import is_secret_header
from protobench.protocols.flags import OneLine, ProtocolFlag
from protobench.protocols.oneline import for_url
from protobench.redaction import redact_url, redact_value

SOURCE = "<command line>"
"""The source of a URL run's profile, in its plan and snapshot."""


@dataclass(frozen=True)
class UrlRun:
    """A URL run's profile: as loaded, and as data (secrets in clear, never stored)."""

    loaded: LoadedProfile
    data: dict[str, Any]


def _given(value: Any) -> bool:
    return value is not None and value is not False and value != []


def _parsed(flag: ProtocolFlag, raw: Any) -> Any:
    """The flag's value as its row reads it; a bad one is an error naming the flag."""
    if flag.parse is None:
        return raw
    items = raw if flag.repeatable else [raw]
    parsed = []
    for item in items:
        try:
            parsed.append(flag.parse(item))
        except ValueError as exc:
            shown = "" if flag.secret or flag.repeatable else f" {item[:60]!r}"
            raise ProfileError(flag.label + shown, "", str(exc)) from None
    return parsed if flag.repeatable else parsed[0]


Setters = dict[tuple[str, str], ProtocolFlag]
"""Which flag set each key: ``(scope, key)`` -> its row."""


def _apply(
    line: OneLine, given: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], Setters]:
    """The op's parameters and the options the flags set, and which flag set each key."""
    scopes: dict[str, dict[str, Any]] = {"params": {}, "options": {}}
    setters: Setters = {}
    for flag in line.flags:
        raw = given.get(flag.name)
        if not _given(raw):
            continue
        try:
            changes = flag.to(_parsed(flag, raw))
        except ValueError as exc:
            raise ProfileError(flag.label, "", str(exc)) from None
        into = scopes[flag.scope]
        for name, value in changes.items():
            old = into.get(name)
            if isinstance(old, dict) and isinstance(value, dict):
                into[name] = {**old, **value}
            elif (flag.scope, name) in setters and setters[flag.scope, name] is not flag:
                other = setters[flag.scope, name]
                raise ProfileError(f"{other.label}, {flag.label}", "", "give one of them, not both")
            else:
                into[name] = value
            setters[flag.scope, name] = flag
    return scopes["params"], scopes["options"], setters


def _name(url: str) -> str:
    """A profile name from the URL's host and port (``127.0.0.1-8080``)."""
    netloc = url.partition("://")[2].split("/", 1)[0].rpartition("@")[2]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", netloc.replace(":", "-")).strip(".-")
    try:
        return check_name(name[:64].rstrip(".-"))
    except ValueError:
        return "url"


def url_profile(url: str, given: Mapping[str, Any], name: str | None = None) -> UrlRun:
    """The loaded profile of a run of ``url`` with the one-line flags ``given`` (by name).

    ``name`` names the profile (default: from the URL's host and port). Every
    error is a :class:`ProfileError` naming the flag (or the URL) it is about.
    """
    shown = redact_url(url)
    try:
        line = for_url(url)
        registry.load(line.protocol).check_target(url)
    except ValueError as exc:
        raise ProfileError("URL", "", str(exc)) from None
    params, options, setters = _apply(line, given)
    has_body = "body" in params or "body_file" in params
    method = str(params.pop("method", "POST" if has_body else "GET"))
    group = {"name": method.lower(), "op": line.op, "count": line.sessions, "method": method}
    data: dict[str, Any] = {
        "name": name or _name(url),
        "protocol": line.protocol,
        "description": f"{method} {shown} (protobench run URL)",
        "target": url,
    }
    if options:
        data["options"] = options
    data["group"] = [{**group, **params}]
    text = writer.dumps(redacted(data))
    try:
        loaded = loader.from_data(data, SOURCE, text)
    except ProfileError as exc:
        raise _about_flag(exc, setters, shown) from None
    return UrlRun(loaded, data)


def redacted(data: Mapping[str, Any]) -> dict[str, Any]:
    """A URL run's profile data with its secrets replaced, as a plan's are
    (:meth:`~protobench.engine.plan.RunPlan.redacted`: the plugin's rule, then every
    URL's password and every value named as a secret)."""
    plugin = registry.load(str(data["protocol"]))
    options = dict(data.get("options", {}))
    out = dict(data)
    if options:
        out["options"] = plugin.redact(options)
    out["group"] = [plugin.redact(group, options) for group in data["group"]]
    hidden: dict[str, Any] = redact_value(out)
    return hidden


def _about_flag(exc: ProfileError, setters: Setters, url: str) -> ProfileError:
    """``exc`` (about a key of the built profile) naming the flag that set the key."""
    if exc.key == "target":
        return ProfileError(url, "", exc.message)
    scope, _, rest = exc.key.partition(".")
    scope = "params" if scope.startswith("group") else scope
    name = rest.split(".")[0].split("[")[0]
    flags = [flag for (where, key), flag in setters.items() if where == scope and key == name]
    if not flags:  # about the parameters together (body and body_file): every flag of them
        flags = [flag for (where, _), flag in setters.items() if where == scope]
    labels = ", ".join(dict.fromkeys(flag.label for flag in flags)) or url
    return ProfileError(labels, "", exc.message)


def secret_headers(data: Mapping[str, Any]) -> dict[str, str]:
    """The headers of the profile's group whose values are secrets (the plugin's rule)."""
    listed = frozenset(str(n).lower() for n in data.get("options", {}).get("secret_headers", []))
    headers: Mapping[str, str] = data["group"][0].get("headers", {})
    return {name: value for name, value in headers.items() if is_secret_header(name, listed)}


def saved_profile(
    run: UrlRun, settings: Mapping[str, Any], headers_file: str, file_headers: str = ""
) -> tuple[str, str | None]:
    """The TOML of a URL run's profile with ``settings`` (run settings given, by name) as its
    keys, and the text of its headers file (``None``: no secret header).

    The secret headers leave the profile for ``headers_file`` (the name the
    profile refers to it by), after ``file_headers``: the lines of the headers
    file the run was given (``-H @FILE``), which it replaces.
    """
    group = dict(run.data["group"][0])
    secrets = secret_headers(run.data)
    headers_text = None
    if secrets:
        kept = {k: v for k, v in group.pop("headers").items() if k not in secrets}
        if kept:
            group["headers"] = kept
        given = (
            file_headers if not file_headers or file_headers.endswith("\n") else file_headers + "\n"
        )
        headers_text = given + "".join(f"{name}: {value}\n" for name, value in secrets.items())
        group["headers_file"] = headers_file
    data = {k: v for k, v in run.data.items() if k not in ("options", "group")}
    for setting, value in settings.items():
        if setting != "options":
            data[setting] = list(value) if isinstance(value, tuple) else value
    options = {**run.data.get("options", {}), **settings.get("options", {})}
    if options:
        data["options"] = options
    data["group"] = [group]
    return writer.dumps(data), headers_text

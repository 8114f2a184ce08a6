"""``protobench discover URL [--write-profile FILE]``: what a target has; a profile fitted to it.

One path for every protocol plugin that implements
:meth:`~protobench.protocols.base.ProtocolPlugin.discover`: ``discover URL`` picks
the plugin whose URL scheme is its own (``bacnet://``: ``discover_by_scheme``),
``discover NAME URL`` names it (``haystack``, whose ``http(s)://`` other plugins
share). The summary goes to stdout; the profile is checked like any profile file
before it is written. Exit codes: 0 ok, 2 bad input, 3 the device or server did
not answer (or refused the login).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from protobench.cli.common import OptOption, fail, parse_pairs, parse_value
from protobench.protocols import registry
from protobench.redaction import redact_text, redact_url
from protobench.termtext import echo
from protobench.vocab.exceptions import ExitCode
from protobench.vocab.units import parse_duration

if TYPE_CHECKING:
    from protobench.protocols.base import Discovery, ProtocolPlugin


def _by_scheme(url: str) -> tuple[str, ProtocolPlugin] | None:
    """The plugin that discovers ``url`` by its scheme alone, in registry order, or None.

    Plugins are loaded one by one until one claims the scheme (``bacnet://`` loads
    ``bacnet-ip`` only); one that cannot load is skipped, and its error is raised
    when no other claims the URL (a missing extra is the likely reason).
    """
    scheme = url.partition("://")[0].lower()
    failed: registry.PluginError | None = None
    for name in registry.names():
        try:
            plugin = registry.load(name)
        except registry.PluginError as exc:
            failed = failed or exc
            continue
        if plugin.discover_by_scheme and plugin.discovers() and scheme in plugin.url_schemes:
            return name, plugin
    if failed is not None:
        raise failed
    return None


def _expected() -> str:
    """``a bacnet:// URL or `haystack URL```: how to name each plugin that discovers."""
    forms = []
    for name in registry.names():
        try:
            plugin = registry.load(name)
        except registry.PluginError:
            continue
        if not plugin.discovers():
            continue
        if plugin.discover_by_scheme:
            forms.append(f"a {' or '.join(f'{s}://' for s in plugin.url_schemes)} URL")
        else:
            forms.append(f"`{name} URL`")
    return " or ".join(forms)


def _plugin(what: str, url: str | None) -> tuple[ProtocolPlugin, str, str]:
    """(plugin, URL, how the command names the target in its messages); exit 2 if none."""
    if what in registry.names():
        plugin = registry.load(what)
        if plugin.discovers():
            if url is None:
                fail(f"discover {what}: give the URL to ask, e.g. `protobench discover {what} URL`")
            return plugin, url, f"discover {what}"
    elif url is None and "://" in what:
        found = _by_scheme(what)
        if found is not None:
            return found[1], what, "discover"
    fail(f"discover: expected {_expected()}, got {redact_url(what)!r}")


def _discover(
    plugin: ProtocolPlugin, url: str, said: str, opts: dict[str, object], wait: float, name: str
) -> Discovery:
    """Validate the URL and ``--opt``, then ask the target (exit 2 bad input, 3 no answer)."""
    from pydantic import ValidationError  # noqa: PLC0415 - pydantic: not for --help

    from protobench.protocols.base import DiscoverRequest  # noqa: PLC0415
    from protobench.vocab.errors import OpError  # noqa: PLC0415

    try:
        plugin.check_target(url)
    except ValueError as exc:
        fail(f"{said}: {exc}")
    try:
        options = plugin.options.model_validate(opts)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        fail(f"--opt{' ' + where if where else ''}: {redact_text(error['msg'])}")
    request = DiscoverRequest(url=url, options=options, timeout=wait, profile_name=name)
    try:
        return asyncio.run(plugin.discover(request))
    except OpError as exc:
        fail(f"{said} {redact_url(url)}: {redact_text(str(exc))}", code=exc.exit_code)


def discover_command(
    what: Annotated[
        str,
        typer.Argument(
            metavar="URL|PROTOCOL",
            help="A device URL (bacnet://127.0.0.1:47808/), or `haystack` then its URL.",
        ),
    ],
    url: Annotated[
        str | None,
        typer.Argument(
            metavar="URL", help="With `haystack`: the API URL, e.g. http://127.0.0.1:8080/api"
        ),
    ] = None,
    write_profile: Annotated[
        Path | None,
        typer.Option(
            "--write-profile", metavar="FILE", help="Write a profile fitted to the target here."
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", metavar="NAME", help="The written profile's name.")
    ] = None,
    timeout: Annotated[
        str, typer.Option("--timeout", metavar="DURATION", help="Per request, e.g. 3s.")
    ] = "3s",
    opt: OptOption = None,
) -> None:
    """Ask a device or server what it has; write a profile fitted to it.

    BACnet/IP: objects, value datatypes, commandable objects. Haystack:
    about, ops, formats, a few entity ids, hisRead/pointWrite/watch ops.

    \b
    Examples:
      protobench discover bacnet://127.0.0.1:47808/
      protobench discover bacnet://127.0.0.1:47808/ --write-profile mine.toml
      protobench discover haystack http://127.0.0.1:8080/api --opt user=admin

    \b
    Exit codes: 0 ok, 2 bad input (URL, option, a missing extra),
    3 the device or server did not answer (or refused the login).
    """
    wait = parse_value(timeout, parse_duration, "--timeout") or 3.0
    opts = parse_pairs(opt or [], "--opt")
    profile_name = name or (write_profile.stem if write_profile else "discovered")
    plugin, target, said = _plugin(what, url)
    found = _discover(plugin, target, said, opts, wait, profile_name)
    profile = found.profile
    echo(found.summary)
    if write_profile is None:
        return
    from protobench.profiles import loader  # noqa: PLC0415 - pydantic: not for --help

    try:
        loader.parse(profile, str(write_profile))
    except loader.ProfileError as exc:
        fail(f"the fitted profile does not load: {exc}", code=ExitCode.INCOMPLETE)
    try:
        write_profile.write_text(profile, encoding="utf-8")
    except OSError as exc:
        fail(f"{write_profile}: cannot write: {exc.strerror}")
    echo(f"profile written to {write_profile}")


def register(app: typer.Typer) -> None:
    app.command("discover")(discover_command)

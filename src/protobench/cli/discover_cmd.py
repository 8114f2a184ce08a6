"""``protobench discover URL [--write-profile FILE]``: what a device has; a profile fitted to it.

``bacnet://HOST[:PORT]`` (:mod:`protobench.protocols.bacnet_ip.discover`) and
``haystack http(s)://HOST/API`` (:mod:`protobench.protocols.haystack.discover`).
The summary goes to stdout; the profile is checked like any profile file
before it is written. Exit codes: 0 ok, 2 bad input, 3 the device or server
did not answer (or refused the login).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from protobench.cli.common import OptOption, fail, parse_pairs, parse_value
from protobench.protocols.registry import require
from protobench.redaction import redact_text, redact_url
from protobench.vocab.exceptions import ExitCode
from protobench.vocab.units import parse_duration


def _bacnet(url: str, opts: dict[str, object], wait: float, name: str) -> tuple[str, str]:
    """(summary, fitted profile) of the BACnet/IP device at ``url``."""
    with require("bacnet-ip", "protocol"):  # bac-py: the bacnet extra
        from pydantic import ValidationError  # noqa: PLC0415

        from protobench.protocols.bacnet_ip import discover, fit  # noqa: PLC0415
        from protobench.protocols.bacnet_ip.params import BacnetIpOptions  # noqa: PLC0415
        from protobench.vocab.errors import OpError  # noqa: PLC0415
    try:
        options = BacnetIpOptions.model_validate(opts)
    except ValidationError as exc:
        fail(f"--opt: {exc.errors()[0]['msg']}")
    try:
        info = asyncio.run(discover.discover(url, options, wait))
    except OpError as exc:
        fail(f"discover {redact_url(url)}: {exc}", code=exc.exit_code)
    return fit.summary(info), fit.fitted_profile(info, name)


def _haystack(url: str, opts: dict[str, object], wait: float, name: str) -> tuple[str, str]:
    """(summary, fitted profile) of the Haystack server at ``url``."""
    if not url.startswith(("http://", "https://")):
        fail(f"discover haystack: expected an http(s):// URL, got {redact_url(url)!r}")
    with require("haystack", "protocol"):  # hs_py: the haystack extra
        from pydantic import ValidationError  # noqa: PLC0415

        from protobench.protocols.haystack import discover, fit  # noqa: PLC0415
        from protobench.protocols.haystack.models import HaystackOptions  # noqa: PLC0415
        from protobench.vocab.errors import OpError  # noqa: PLC0415
    try:
        options = HaystackOptions.model_validate(opts)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        fail(f"--opt {where}: {redact_text(error['msg'])}")
    try:
        info = asyncio.run(discover.discover(url, options, wait))
    except OpError as exc:
        fail(f"discover haystack {redact_url(url)}: {redact_text(str(exc))}", code=exc.exit_code)
    given = set(options.model_fields_set)
    return fit.summary(info), fit.fitted_profile(info, name, options, given)


def discover_command(
    what: Annotated[
        str,
        typer.Argument(
            help="A device URL (bacnet://127.0.0.1:47808/), or `haystack` then its URL."
        ),
    ],
    url: Annotated[
        str | None,
        typer.Argument(help="With `haystack`: the API URL, e.g. http://127.0.0.1:8080/api"),
    ] = None,
    write_profile: Annotated[
        Path | None,
        typer.Option("--write-profile", help="Write a profile fitted to the target here."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="The written profile's name.")] = None,
    timeout: Annotated[str, typer.Option("--timeout", help="Per request, e.g. 3s.")] = "3s",
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
    if what == "haystack":
        if url is None:
            fail("discover haystack: give the server's URL, e.g. http://127.0.0.1:8080/api")
        text, profile = _haystack(url, opts, wait, profile_name)
    elif what.startswith("bacnet://") and url is None:
        text, profile = _bacnet(what, opts, wait, profile_name)
    else:
        fail(f"discover: expected a bacnet:// URL or `haystack URL`, got {redact_url(what)!r}")
    typer.echo(text)
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
    typer.echo(f"profile written to {write_profile}")


def register(app: typer.Typer) -> None:
    app.command("discover")(discover_command)

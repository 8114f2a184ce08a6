"""``protobench discover URL [--write-profile FILE]``: what a device has; a profile fitted to it.

Only ``bacnet://`` targets for now (:mod:`protobench.protocols.bacnet_ip.discover`).
The summary goes to stdout; the profile is checked like any profile file
before it is written. Exit codes: 0 ok, 2 bad input, 3 the device did not answer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from protobench.cli.boundary import EXIT_INCOMPLETE
from protobench.cli.common import OptOption, fail, parse_pairs, parse_value
from protobench.profiles.units import parse_duration
from protobench.protocols.registry import require
from protobench.redaction import redact_url


def register(app: typer.Typer) -> None:
    @app.command("discover")
    def discover_command(
        url: Annotated[str, typer.Argument(help="Device URL, e.g. bacnet://127.0.0.1:47808/")],
        write_profile: Annotated[
            Path | None,
            typer.Option("--write-profile", help="Write a profile fitted to the device here."),
        ] = None,
        name: Annotated[
            str | None, typer.Option("--name", help="The written profile's name.")
        ] = None,
        timeout: Annotated[str, typer.Option("--timeout", help="Per request, e.g. 3s.")] = "3s",
        opt: OptOption = None,
    ) -> None:
        """Ask a device what it has: objects, value datatypes, commandable objects.

        \b
        Examples:
          protobench discover bacnet://127.0.0.1:47808/
          protobench discover bacnet://127.0.0.1:47808/ --write-profile mine.toml

        \b
        Exit codes: 0 ok, 2 bad input (URL, option, a missing bacnet extra),
        3 the device did not answer.
        """
        if not url.startswith("bacnet://"):
            fail(f"discover: expected a bacnet:// URL, got {redact_url(url)!r}")
        wait = parse_value(timeout, parse_duration, "--timeout") or 3.0
        with require("bacnet-ip", "protocol"):  # bac-py: the bacnet extra
            from pydantic import ValidationError  # noqa: PLC0415

            from protobench.profiles import loader  # noqa: PLC0415
            from protobench.protocols.bacnet_ip.discover import discover  # noqa: PLC0415
            from protobench.protocols.bacnet_ip.fit import fitted_profile, summary  # noqa: PLC0415
            from protobench.protocols.bacnet_ip.params import BacnetIpOptions  # noqa: PLC0415
            from protobench.protocols.base import OpError  # noqa: PLC0415
        try:
            options = BacnetIpOptions.model_validate(parse_pairs(opt or [], "--opt"))
        except ValidationError as exc:
            fail(f"--opt: {exc.errors()[0]['msg']}")
        try:
            info = asyncio.run(discover(url, options, wait))
        except OpError as exc:
            fail(f"discover {redact_url(url)}: {exc}", code=EXIT_INCOMPLETE)
        typer.echo(summary(info))
        if write_profile is None:
            return
        profile_name = name or write_profile.stem
        text = fitted_profile(info, profile_name)
        try:
            loader.parse(text, str(write_profile))
        except loader.ProfileError as exc:
            fail(f"the fitted profile does not load: {exc}", code=EXIT_INCOMPLETE)
        try:
            write_profile.write_text(text, encoding="utf-8")
        except OSError as exc:
            fail(f"{write_profile}: cannot write: {exc.strerror}")
        typer.echo(f"profile written to {write_profile}")

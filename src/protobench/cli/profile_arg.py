"""The first argument of ``run`` and ``sweep``: a built-in profile, a profile file or a URL.

A URL (``http://HOST/PATH``) is a run of one request built from the one-line
flags (``-H``, ``-m``, ``--data``...: :mod:`protobench.profiles.oneline`);
those flags apply to a URL only. ``--save-profile FILE`` keeps a URL run as a
profile (and its secret headers in a file beside it that only its owner may
read). Every error is one line and exit 2, before anything runs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from protobench.cli.common import fail
from protobench.cli.run_flags import RunFlags
from protobench.profiles.settings import flag_of
from protobench.protocols.oneline import is_url
from protobench.termtext import echo

if TYPE_CHECKING:  # pydantic and the plugins load when a profile does, not for --help
    from protobench.profiles.loader import LoadedProfile
    from protobench.profiles.oneline import UrlRun

SaveProfileOption = Annotated[
    Path | None,
    typer.Option(
        "--save-profile",
        metavar="FILE",
        help="Also write a URL run as a profile file (secret headers in FILE's .headers).",
    ),
]
HEADERS_SUFFIX = ".headers"
"""The saved profile's headers file: the profile's path with this suffix."""
_HOST_PORT = re.compile(r"^[\w.-]+:\d+(/|$)")


@dataclass(frozen=True)
class FirstArgument:
    """What a run's first argument names: the profile, its URL run when it is a URL, and the
    flags that apply to it (a URL run's are without ``$PROTOBENCH_TARGET``)."""

    loaded: LoadedProfile
    url_run: UrlRun | None
    flags: RunFlags


def load_profile(profile: str, flags: RunFlags, save: Path | None = None) -> FirstArgument:
    """The profile a run's first argument names, and its URL run when it is a URL
    (named after ``save``, the file it is to be kept in: :func:`save_run`)."""
    from protobench.profiles import loader, oneline  # noqa: PLC0415 - pydantic: not for --help
    from protobench.protocols.registry import PluginError  # noqa: PLC0415

    if not is_url(profile):
        given = flags.line_given()
        if given:
            fail(f"{given[0].label}: applies to a URL run (protobench run http://HOST/PATH ...)")
        if save is not None:
            fail("--save-profile: applies to a URL run (a profile is a file already)")
        try:
            return FirstArgument(loader.load(profile), None, flags)
        except loader.ProfileError as exc:
            hint = " (a URL needs its scheme: http://...)" if _HOST_PORT.match(profile) else ""
            fail(f"{exc}{hint}")
        except PluginError as exc:
            fail(str(exc))
    if flags.given.get("target") is not None and "target" not in flags.from_env:
        fail(f"{flag_of('target')}: a URL run's target is its URL; give one of them")
    name = save.stem if save is not None and _valid_name(save.stem) else None
    try:
        run = oneline.url_profile(profile, flags.line, name)
    except (loader.ProfileError, PluginError) as exc:
        fail(str(exc))
    return FirstArgument(run.loaded, run, flags.without("target"))


def _valid_name(name: str) -> bool:
    from protobench.profiles.model import check_name  # noqa: PLC0415

    try:
        check_name(name)
    except ValueError:
        return False
    return True


def save_run(run: UrlRun, flags: RunFlags, path: Path) -> None:
    """Write a URL run as a profile (and its headers file), never over an existing file."""
    from protobench.profiles.oneline import saved_profile  # noqa: PLC0415

    headers = path.with_suffix(HEADERS_SUFFIX)
    given_file = run.data["group"][0].get("headers_file")
    for taken in (path, headers):
        if taken.exists():
            fail(f"--save-profile: {taken} exists; remove it or name another file")
    try:
        file_headers = Path(given_file).read_text(encoding="utf-8") if given_file else ""
        text, secret = saved_profile(run, flags.profile_keys(), str(headers), file_headers)
        if secret is not None:
            _write_new(headers, secret, 0o600)
        _write_new(path, text, 0o644)
    except OSError as exc:
        fail(f"--save-profile {path}: {exc.strerror or exc}")
    kept = f" and {headers} (secret headers, readable by you only)" if secret else ""
    echo(f"protobench: wrote {path}{kept}", err=True)


def _write_new(path: Path, text: str, mode: int) -> None:
    """Write ``text`` to a new file ``path`` created with ``mode`` (an existing file: error)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)

"""The one place where every command's errors become an exit code and one line on stderr.

:class:`Boundary` is the root command's class: it runs the command line
without Click's standalone handling and maps what comes out.

- a usage error (unknown flag, a value Click cannot convert), a profile or
  plugin error: ``protobench: error: ...``, exit 2;
- the run could not complete (the embedded target did not start, an OS error
  such as a file that cannot be written): one line, exit 3;
- an optional extra's library missing (``ModuleNotFoundError`` of bac_py...):
  ``... needs `pip install 'protobench[bacnet]'```, exit 2;
- Ctrl-C outside a run: exit 130;
- anything else is a bug: one line naming the exception and a log file that
  holds the traceback, exit 3.

Every line goes through :func:`protobench.redaction.redact_text`. Exception
groups (a task group's) are unwrapped to the errors inside them. Only the
standard library and Typer are imported up front, so ``--help`` stays fast.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer
import typer.core

from protobench.home import home
from protobench.redaction import redact_text
from protobench.termtext import VisibleFormatter, echo

EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_INTERRUPTED = 130


def one_line(message: str) -> str:
    """``message`` on one line (its lines joined by ``; ``) with every secret hidden."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return redact_text("; ".join(lines))


def error(message: str) -> None:
    """Print ``protobench: error: MESSAGE`` on stderr, on one line, secrets hidden."""
    echo(f"protobench: error: {one_line(message)}", err=True)


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, or ``[exc]``."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def _bad_input_types() -> tuple[type[BaseException], ...]:
    from protobench.profiles.loader import ProfileError  # noqa: PLC0415 - only on an error
    from protobench.protocols.registry import PluginError  # noqa: PLC0415
    from protobench.targets.base import ServeError  # noqa: PLC0415

    return (ProfileError, PluginError, ServeError)


def _incomplete_types() -> tuple[type[BaseException], ...]:
    from protobench.targets.launcher import TargetError  # noqa: PLC0415 - only on an error

    return (TargetError, OSError)


def crash_log(exc: BaseException) -> Path | None:
    """Write ``exc``'s traceback to a new log file in ``<home>/logs`` (secrets hidden).

    Its path, or None when neither there nor in the temporary directory can it be written.
    """
    text = redact_text("".join(traceback.format_exception(exc)))
    name = f"crash-{time.strftime('%Y%m%dT%H%M%S')}-{id(exc):x}.log"
    for directory in (home() / "logs", Path(tempfile.gettempdir())):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / name
            path.write_text(text, encoding="utf-8")
        except OSError:
            continue
        return path
    return None


def _describe_os_error(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


def _is_click_error(exc: BaseException) -> bool:
    """A Click (or Typer's own Click) usage or parameter error: it formats its own message."""
    return hasattr(exc, "format_message") and hasattr(exc, "exit_code")


def exit_code_of(exc: BaseException) -> int:
    """Print what ``exc`` means on one line and return the exit code for it."""
    found = leaves(exc)
    if isinstance(exc, typer.Exit):
        return int(exc.exit_code)
    if _is_click_error(exc):
        code = int(getattr(exc, "exit_code", EXIT_BAD_INPUT))
        if type(exc).__name__ == "NoArgsIsHelpError":
            return code  # Typer has printed the help
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        error(exc.format_message() + hint)  # type: ignore[attr-defined]
        return code
    if all(isinstance(leaf, KeyboardInterrupt | typer.Abort) for leaf in found):
        error("interrupted")
        return EXIT_INTERRUPTED
    bad_input = _bad_input_types()
    incomplete = _incomplete_types()
    if all(isinstance(leaf, bad_input) for leaf in found):
        for leaf in found:
            error(str(leaf))
        return EXIT_BAD_INPUT
    if all(isinstance(leaf, bad_input + incomplete) for leaf in found):
        for leaf in found:
            error(_describe_os_error(leaf) if isinstance(leaf, OSError) else str(leaf))
        return EXIT_INCOMPLETE
    from protobench.protocols.registry import missing_extra, needs  # noqa: PLC0415

    extras = {missing_extra(leaf) for leaf in found}
    if None not in extras:  # an optional extra that is not installed
        for extra in sorted(e for e in extras if e):
            error(needs(extra, "this command"))
        return EXIT_BAD_INPUT
    first = next(leaf for leaf in found if not isinstance(leaf, bad_input + incomplete))
    log = crash_log(exc)
    where = f"; the traceback is in {log}" if log else ""
    error(f"unexpected {type(first).__name__}: {first}{where} (a bug: please report it)")
    return EXIT_INCOMPLETE


class Boundary(typer.core.TyperGroup):
    """The root group: maps every error of every command to an exit code and one line."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if logging.lastResort is not None:  # a library's warning on stderr: its text made visible
            logging.lastResort.setFormatter(VisibleFormatter())
        try:
            result = super().main(
                args=args,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
            code = result if isinstance(result, int) else 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        except BaseException as exc:  # the boundary: every error gets its code
            code = exit_code_of(exc)
        if standalone_mode:
            sys.exit(code)
        return code

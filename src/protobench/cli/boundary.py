"""The one place where every command's errors become an exit code and one line on stderr.

:class:`Boundary` is the root command's class: it runs the command line
without Click's standalone handling and maps what comes out.

- an error of protobench's tree (:mod:`protobench.vocab.exceptions`) carries
  its exit code: a profile, plugin or option error is bad input (exit 2), a
  command that could not complete (the embedded target or a Ray cluster did
  not start) exit 3; one line each;
- a usage error (unknown flag, a value Click cannot convert): exit 2;
- an OS error (a file that cannot be written): one line naming it, exit 3;
- an optional extra's library missing (``ModuleNotFoundError`` of bac_py...):
  ``... needs `pip install 'protobench[bacnet]'```, exit 2;
- Ctrl-C outside a run: exit 130;
- anything else is a bug: one line naming the exception and a log file that
  holds the traceback, exit 3.

Every line goes through :func:`protobench.redaction.redact_text`. Exception
groups (a task group's) are unwrapped to the errors inside them, one line each,
and end with the highest of their codes. Only the standard library, Typer and
the exception tree are imported up front, so ``--help`` stays fast.
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
from protobench.vocab.exceptions import ExitCode, ProtobenchError, leaves


def one_line(message: str) -> str:
    """``message`` on one line (its lines joined by ``; ``) with every secret hidden."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return redact_text("; ".join(lines))


def error(message: str) -> None:
    """Print ``protobench: error: MESSAGE`` on stderr, on one line, secrets hidden."""
    echo(f"protobench: error: {one_line(message)}", err=True)


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


def _is_click_error(exc: BaseException) -> bool:
    """A Click (or Typer's own Click) usage or parameter error: it formats its own message."""
    return hasattr(exc, "format_message") and hasattr(exc, "exit_code")


def _usage_error(exc: BaseException) -> int:
    """Print a Click usage error with a pointer to ``--help``; return its exit code."""
    code = int(getattr(exc, "exit_code", ExitCode.BAD_INPUT))
    if type(exc).__name__ != "NoArgsIsHelpError":  # else Typer has printed the help
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        error(exc.format_message() + hint)  # type: ignore[attr-defined]
    return code


def expected_code(leaf: BaseException) -> ExitCode | None:
    """The exit code of an error that ends a command with one line, or None (a bug)."""
    if isinstance(leaf, ProtobenchError):
        return leaf.exit_code
    if isinstance(leaf, OSError):
        return ExitCode.INCOMPLETE
    return None


def describe(leaf: BaseException) -> str:
    """The line of an expected error (an OS error: the file it names and the OS's words)."""
    if isinstance(leaf, OSError) and not isinstance(leaf, ProtobenchError):
        where = f"{leaf.filename}: " if leaf.filename else ""
        return f"{where}{leaf.strerror or leaf}"
    return str(leaf)


def _interrupted(found: list[BaseException]) -> int | None:
    if not all(isinstance(leaf, KeyboardInterrupt | typer.Abort) for leaf in found):
        return None
    error("interrupted")
    return ExitCode.INTERRUPTED


def _expected(found: list[BaseException]) -> int | None:
    """One line per error when every one is expected; the highest of their codes."""
    codes = [expected_code(leaf) for leaf in found]
    if None in codes:
        return None
    for leaf in found:
        error(describe(leaf))
    return max(code for code in codes if code is not None)


def _missing_extras(found: list[BaseException]) -> int | None:
    from protobench.protocols.registry import missing_extra, needs  # noqa: PLC0415

    extras = {missing_extra(leaf) for leaf in found}
    if None in extras:
        return None
    for extra in sorted(e for e in extras if e):
        error(needs(extra, "this command"))
    return ExitCode.BAD_INPUT


def _bug(exc: BaseException, found: list[BaseException]) -> int:
    """One line naming the first unexpected error and the log holding the traceback."""
    first = next(leaf for leaf in found if expected_code(leaf) is None)
    log = crash_log(exc)
    where = f"; the traceback is in {log}" if log else ""
    error(f"unexpected {type(first).__name__}: {first}{where} (a bug: please report it)")
    return ExitCode.INCOMPLETE


def exit_code_of(exc: BaseException) -> int:
    """Print what ``exc`` means on one line and return the exit code for it."""
    if isinstance(exc, typer.Exit):
        return int(exc.exit_code)
    if _is_click_error(exc):
        return _usage_error(exc)
    found = leaves(exc)
    for reader in (_interrupted, _expected, _missing_extras):
        code = reader(found)
        if code is not None:
            return code
    return _bug(exc, found)


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

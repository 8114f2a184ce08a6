"""Text from servers and files on a terminal: control characters shown, never obeyed.

:func:`protobench.termtext.visible` is the one rule; these tests pin it, the
table builders and the progress line that apply it, and that no command
writes to the terminal except through :func:`protobench.termtext.echo` (or a
listed writer of exact data: JSON, NDJSON, exports).
"""

from __future__ import annotations

import ast
import io
import logging
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

import protobench
from protobench.cli.boundary import error
from protobench.cli.complete import profiles, snapshot_refs
from protobench.cli.render import Progress, summary_table
from protobench.engine.events import Notice, RunStarted
from protobench.engine.report_model import CheckResult, NoticeEntry
from protobench.termtext import echo, visible, visible_tree
from tests.support.hostile import EVERYTHING, OSC_TITLE, assert_no_escapes
from tests.support.report_frames import frame, plan_of, report_of

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def test_every_control_character_is_shown_as_an_escape() -> None:
    assert visible("\x1b]0;title\x07") == "\\x1b]0;title\\x07"
    assert visible("a\tb\nc\rd") == "a\\tb\\nc\\rd"
    assert visible("\x9b2J\x9d0;t\x9c\x7f\x00") == "\\x9b2J\\x9d0;t\\x9c\\x7f\\x00"
    assert visible("\ud800") == "\\ud800"
    assert visible("µs → ✔ 日本 [bold]") == "µs → ✔ 日本 [bold]"


def test_line_breaks_stay_only_when_asked_for() -> None:
    assert visible("a\nb\x1b", keep_newlines=True) == "a\nb\\x1b"
    assert visible("a\r\nb", keep_newlines=True) == "a\\r\nb"


def test_text_with_nothing_to_show_is_the_same_object() -> None:
    text = "protocol: 503 Service Unavailable"
    assert visible(text) is text


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_no_control_character_survives_and_twice_is_once(text: str) -> None:
    shown = visible(text)
    assert CONTROL.search(shown) is None
    assert visible(shown) == shown
    kept = visible(text, keep_newlines=True)
    assert CONTROL.search(kept.replace("\n", "")) is None
    assert kept.count("\n") == text.count("\n")


def test_a_tree_is_walked_through_dataclasses_mappings_and_sequences() -> None:
    notice = Notice(kind="worker", message="gone\x1b[2J", elapsed=1.0, details={"tail": "a\x07"})
    shown = visible_tree((notice, [Counter({"op\x1b": 3})], {"k\x9b": ("v\x7f",)}))
    assert shown[0] == Notice(
        kind="worker", message="gone\\x1b[2J", elapsed=1.0, details={"tail": "a\\x07"}
    )
    assert shown[1] == [Counter({"op\\x1b": 3})]
    assert isinstance(shown[1][0], Counter)
    assert shown[2] == {"k\\x9b": ("v\\x7f",)}
    assert notice.message == "gone\x1b[2J"  # the original is untouched
    clean = (Notice(kind="rate", message="x", elapsed=0.0), {"a": [1, "b"]})
    assert visible_tree(clean) is clean


def _hostile_report() -> object:
    plan = plan_of({"get": 2}, ("error_rate < 0.5%",))
    report = report_of(plan, [frame("sustain", 0, 0.0, 1.0, {"get": {"ok": 5, "errors": 2}})])
    sustain = report.phases["sustain"]
    op = replace(sustain.ops["get"], last_errors={"protocol": f"protocol: {EVERYTHING}"})
    hostile = f"x{EVERYTHING}\nthreshold PASS: forged"
    return replace(
        report,
        profile=hostile,
        target=hostile,
        phases={"sustain": replace(sustain, ops={hostile: op, "get": op})},
        notices=[NoticeEntry(kind=hostile, message=hostile)],
        verdicts=replace(
            report.verdicts,
            checks=[CheckResult(expr="ok[get] > 0", value=0, ok=False, reason=hostile)],
            findings=[hostile],
            incomplete_reason=hostile,
        ),
        snapshot_error=hostile,
    )


def test_the_summary_shows_a_reports_strings_and_obeys_none_of_them() -> None:
    text = summary_table(_hostile_report())  # type: ignore[arg-type]
    assert_no_escapes(text.encode(), plain=True)
    assert "\\x1b]0;PWNED-TITLE\\x07" in text
    assert not any(line.startswith("threshold PASS: forged") for line in text.splitlines())
    assert "\\nthreshold PASS: forged" in text


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_line_shows_a_notice_and_a_target_as_text() -> None:
    stream = _Terminal()
    progress = Progress(1.0, 0.0, stream)
    progress(RunStarted(plan={}, target=EVERYTHING, target_kind="external", workers=1,
                        sessions_opened=1, sessions_failed=0, log_dir=""))  # fmt: skip
    progress(Notice(kind="target", message=EVERYTHING, elapsed=0.5))
    raw = stream.getvalue().replace("\r\x1b[2K", "")  # its own: back to the line's start
    assert_no_escapes(raw.encode(), plain=True)
    assert raw.count("\\x1b]52;c;UFdORUQ=\\x07") == 2


def test_an_error_line_on_stderr_shows_its_text(capsys: pytest.CaptureFixture[str]) -> None:
    error(f"the run failed: {EVERYTHING}")
    echo(f"plain {EVERYTHING}")
    captured = capsys.readouterr()
    assert_no_escapes((captured.out + captured.err).encode(), plain=True)
    assert captured.err.startswith("protobench: error: the run failed: \\x1b]0;PWNED")
    assert captured.err.count("\n") == 1


# Writers of exact data (JSON, NDJSON, exports) and the progress line (its own
# "\r\x1b[2K" before a line made visible): every other write for a terminal is echo.
RAW_WRITERS = {
    ("cli/common.py", "print_json"),
    ("cli/run_cmd.py", "_print_report"),
    ("cli/ndjson.py", "_emit"),
    ("cli/snapshots_cmd.py", "export_snapshot"),
    ("cli/render.py", "_line"),
    ("cli/render.py", "close"),
    ("cli/__init__.py", "main"),  # the root's help: our own text, printed before any import
}
_STREAM = re.compile(r"std(out|err)|stream")


def _terminal_writes(path: Path) -> list[tuple[str, int]]:
    """``(enclosing function, line)`` of each print, typer/click echo or stdout/stderr write."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = function
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = child.name
            if isinstance(child, ast.Call):
                func = child.func
                if (
                    (isinstance(func, ast.Name) and func.id == "print")
                    or (
                        isinstance(func, ast.Attribute)
                        and func.attr in ("echo", "secho")
                        and ast.unparse(func.value) in ("typer", "click")
                    )
                    or (
                        isinstance(func, ast.Attribute)
                        and func.attr in ("write", "writelines")
                        and _STREAM.search(ast.unparse(func.value))
                    )
                ):
                    found.append((function, child.lineno))
            visit(child, name)

    visit(ast.parse(path.read_text()), "<module>")
    return found


def test_every_terminal_write_of_the_commands_and_the_monitor_goes_through_echo() -> None:
    root = Path(protobench.__path__[0])
    stray = []
    used = set()
    for package in ("cli", "tui"):
        for path in sorted((root / package).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            for function, line in _terminal_writes(path):
                if (where, function) in RAW_WRITERS:
                    used.add((where, function))
                else:
                    stray.append(f"{where}:{line} in {function}")
    assert stray == [], "write through protobench.termtext.echo instead"
    assert used == RAW_WRITERS, "a listed raw writer no longer writes: remove it from the list"


def test_a_librarys_warning_on_stderr_shows_its_text() -> None:
    from protobench.cli import app  # noqa: PLC0415 - the root command installs the formatter

    assert app(["--version"], standalone_mode=False) in (0, None)
    assert logging.lastResort is not None
    record = logging.LogRecord(
        "lib", logging.WARNING, __file__, 1, "peer said %s", (EVERYTHING,), None
    )
    shown = logging.lastResort.format(record)
    assert_no_escapes(shown.encode(), plain=True)
    assert "peer said \\x1b]0;PWNED-TITLE" in shown


def test_shell_completion_offers_no_name_with_a_control_character(tmp_path: Path) -> None:
    store = tmp_path / "snapshots"
    store.mkdir()
    for name in ("20260101-000000-a-0001", f"20260102-000000-b{OSC_TITLE}-0002"):
        (store / f"{name}.json.gz").write_bytes(b"")
        (tmp_path / f"{name}.toml").write_text("")
    context = SimpleNamespace(params={"snapshots_dir": store})
    refs = snapshot_refs(context, "")  # type: ignore[arg-type]
    assert refs == [("latest", "20260101-000000-a-0001"), ("20260101-000000-a-0001", "")]
    assert profiles(f"{tmp_path}/2") == [f"{tmp_path}/20260101-000000-a-0001.toml"]

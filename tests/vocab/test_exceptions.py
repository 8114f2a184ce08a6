"""The error tree: one root, each error carrying its exit code; the exit codes declared once.

Every exception class protobench defines derives from ``ProtobenchError`` (found by
reading every module, so a new class outside the tree fails here), each branch
carries the code the docs document, and the exit-code table of the docs
(``docs/concepts/exit-codes.md``) lists
exactly the members of ``ExitCode``.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import pytest

from protobench.engine.distributed.cluster import ClusterStartError, RayBackendError
from protobench.engine.frames import FrameError
from protobench.engine.report_model import ReportError
from protobench.profiles.loader import ProfileError
from protobench.protocols.registry import PluginError
from protobench.snapshots.store import SnapshotError, SnapshotWriteError
from protobench.targets.base import ServeError
from protobench.targets.launcher import TargetError
from protobench.vocab.errors import OpError
from protobench.vocab.exceptions import (
    BadInput,
    ExitCode,
    Incomplete,
    NotSaved,
    ProtobenchError,
    leaves,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "protobench"
EXIT_CODES_PAGE = SRC.parents[1] / "docs" / "concepts" / "exit-codes.md"


def _exception_classes() -> list[tuple[str, str]]:
    """(module, class) of every class in src whose base names an exception class."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            names = [ast.unparse(base).rpartition(".")[2] for base in node.bases]
            builtin = [n for n in names if isinstance(getattr(builtins, n, None), type)]
            if any(issubclass(getattr(builtins, n), BaseException) for n in builtin) or any(
                n.endswith(("Error", "Exception")) or n in {"BadInput", "Incomplete", "NotSaved"}
                for n in names
            ):
                found.append((module, node.name))
    return found


def test_every_exception_class_of_protobench_is_in_the_tree() -> None:
    classes = _exception_classes()
    assert len(classes) >= 17
    outside = []
    for module, name in classes:
        cls = getattr(importlib.import_module(module), name)
        if not issubclass(cls, ProtobenchError):
            outside.append(f"{module}.{name}")
    assert outside == []


@pytest.mark.parametrize(
    ("cls", "code"),
    [
        (ProfileError, ExitCode.BAD_INPUT),
        (PluginError, ExitCode.BAD_INPUT),
        (ServeError, ExitCode.BAD_INPUT),
        (SnapshotError, ExitCode.BAD_INPUT),
        (ReportError, ExitCode.BAD_INPUT),
        (RayBackendError, ExitCode.BAD_INPUT),
        (TargetError, ExitCode.INCOMPLETE),
        (ClusterStartError, ExitCode.INCOMPLETE),
        (OpError, ExitCode.INCOMPLETE),
        (FrameError, ExitCode.INCOMPLETE),
        (SnapshotWriteError, ExitCode.NOT_SAVED),
    ],
)
def test_each_error_carries_the_exit_code_of_its_branch(
    cls: type[ProtobenchError], code: ExitCode
) -> None:
    assert cls.exit_code == code
    branch = {ExitCode.BAD_INPUT: BadInput, ExitCode.INCOMPLETE: Incomplete}.get(code, NotSaved)
    assert issubclass(cls, branch)


def test_errors_that_were_standard_exceptions_still_are() -> None:
    assert issubclass(ReportError, ValueError)
    assert issubclass(SnapshotWriteError, OSError)
    error = SnapshotWriteError(Path("/store/x.json.gz"), PermissionError(13, "Permission denied"))
    assert (error.errno, error.filename) == (13, "/store/x.json.gz")
    assert str(error) == "cannot write /store/x.json.gz: Permission denied"


def test_leaves_unwrap_nested_groups_in_order() -> None:
    first, second, third = ValueError("1"), KeyError("2"), OSError("3")
    group = ExceptionGroup("outer", [first, ExceptionGroup("inner", [second, third])])
    assert leaves(group) == [first, second, third]
    assert leaves(first) == [first]


def test_the_docs_exit_code_table_lists_exactly_the_exit_codes() -> None:
    text = EXIT_CODES_PAGE.read_text(encoding="utf-8")
    table = text.split("## Exit codes\n\n", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `(\d+)` \| (.+) \|$", table, flags=re.MULTILINE)
    assert [int(code) for code, _ in rows] == sorted(code.value for code in ExitCode)
    assert all(meaning.strip() for _, meaning in rows)

"""The CLI boundary: each error becomes its documented exit code and one line, never a traceback."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
from typer.testing import CliRunner

from protobench.cli import app, boundary
from protobench.profiles import loader
from protobench.targets.launcher import TargetError
from protobench.vocab.exceptions import NotSaved, leaves


def test_unexpected_exception_is_one_line_with_a_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken(name: str) -> loader.LoadedProfile:
        raise RuntimeError("mqtt://u:S3CRET@127.0.0.1 went wrong")

    monkeypatch.setattr(loader, "load", broken)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["profiles", "show", "http-get"])
    assert result.exit_code == 3
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("protobench: error: unexpected RuntimeError: ")
    assert "S3CRET" not in result.stderr
    log = Path(result.stderr.split("the traceback is in ")[1].split(" (a bug")[0])
    assert (tmp_path / log).is_file()
    text = (tmp_path / log).read_text()
    assert "Traceback" in text
    assert "S3CRET" not in text


def test_exception_groups_are_unwrapped() -> None:
    group = ExceptionGroup("tasks", [loader.ProfileError("p.toml", "duration", "bad")])
    assert leaves(group)[0].args == ("p.toml: duration: bad",)


def test_usage_errors_are_one_line_exit_2() -> None:
    result = CliRunner().invoke(app, ["run", "http-get", "--connections", "many"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "'--connections'" in result.stderr
    assert "protobench run --help" in result.stderr


def test_sessions_beyond_the_open_file_limit_are_refused_at_load_time() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY or hard * 2 > 1_000_000:
        pytest.skip(f"the open-file limit ({hard}) allows every accepted --connections")
    result = CliRunner().invoke(
        app, ["run", "http-get", "--connections", str(hard * 2), "--processes", "1"]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("protobench: error: --connections: ")
    assert "RLIMIT_NOFILE" in result.stderr
    assert result.stderr.count("\n") == 1


def test_connections_above_the_bound_name_it() -> None:
    result = CliRunner().invoke(app, ["run", "http-get", "--connections", "10000000"])
    assert result.exit_code == 2
    assert "--connections: Input should be less than or equal to 1000000" in result.stderr


class _Unsaved(NotSaved):
    """An error of the tree that no list of types names: the boundary reads its code."""


@pytest.mark.parametrize(
    ("exc", "code", "lines"),
    [
        (loader.ProfileError("p.toml", "duration", "bad"), 2, ["p.toml: duration: bad"]),
        (TargetError("the embedded target exited"), 3, ["the embedded target exited"]),
        (_Unsaved("cannot write /store"), 5, ["cannot write /store"]),
        (
            ExceptionGroup(
                "tasks",
                [loader.ProfileError("p.toml", "rate", "bad"), TargetError("did not start")],
            ),
            3,
            ["p.toml: rate: bad", "did not start"],
        ),
        (
            PermissionError(13, "Permission denied", "/out.json"),
            3,
            ["/out.json: Permission denied"],
        ),
    ],
)
def test_an_expected_error_is_one_line_each_and_the_code_it_carries(
    capsys: pytest.CaptureFixture[str], exc: BaseException, code: int, lines: list[str]
) -> None:
    assert boundary.exit_code_of(exc) == code
    assert capsys.readouterr().err.splitlines() == [f"protobench: error: {x}" for x in lines]

"""``profiles new NAME --from BUILTIN``: the new file loads, and only the profile's name changed."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from protobench.cli import app
from protobench.engine.plan import Overrides, resolve
from protobench.profiles import loader


@pytest.mark.parametrize("builtin", loader.builtin_names())
def test_new_profile_from_every_builtin_loads(tmp_path: Path, builtin: str) -> None:
    result = CliRunner().invoke(
        app, ["profiles", "new", "mine", "--from", builtin, "--dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    path = tmp_path / "mine.toml"
    assert result.stdout.strip() == str(path)
    loaded = loader.load(str(path))
    assert loaded.profile.name == "mine"
    original = tomllib.loads(loader.builtin_text(builtin))
    assert [g.get("name") for g in tomllib.loads(loaded.text)["group"]] == [
        g.get("name") for g in original["group"]
    ]
    assert resolve(loaded, Overrides()).profile == "mine"


def test_new_profile_keeps_the_op_named_get(tmp_path: Path) -> None:
    CliRunner().invoke(app, ["profiles", "new", "mine", "--dir", str(tmp_path)])
    plan = resolve(loader.load(str(tmp_path / "mine.toml")), Overrides())
    assert [g.name for g in plan.groups] == ["get"]


@pytest.mark.parametrize("name", ["../escaped", "a/b", ".hidden", "", "x" * 65])
def test_new_profile_refuses_unsafe_names(tmp_path: Path, name: str) -> None:
    result = CliRunner().invoke(app, ["profiles", "new", name, "--dir", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.startswith("protobench: error: profiles new: expected a name")
    assert list(tmp_path.iterdir()) == []
    assert not (tmp_path.parent / "escaped.toml").exists()


def test_existing_file_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text("keep")
    result = CliRunner().invoke(app, ["profiles", "new", "mine", "--dir", str(tmp_path)])
    assert result.exit_code == 2
    assert (tmp_path / "mine.toml").read_text() == "keep"


def test_unwritable_directory_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["profiles", "new", "mine", "--dir", str(tmp_path / "missing")]
    )
    assert result.exit_code == 2
    path = tmp_path / "missing" / "mine.toml"
    assert result.stderr == f"protobench: error: {path}: cannot write: No such file or directory\n"

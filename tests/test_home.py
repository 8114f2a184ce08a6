"""Where runs go: $PROTOBENCH_HOME, else ./.protobench in a checkout, else the user's data dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from protobench import home


def test_protobench_home_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PROTOBENCH_HOME", str(tmp_path / "runs"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert home.home() == tmp_path / "runs"


def test_a_source_checkout_keeps_runs_in_the_current_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PROTOBENCH_HOME", raising=False)
    assert home.checkout_root(Path(home.__file__).parent) is not None  # these tests run so
    assert home.home() == Path(".protobench")


def test_an_installed_package_uses_the_xdg_data_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    installed = tmp_path / "lib" / "python3.13" / "site-packages" / "protobench"
    installed.mkdir(parents=True)
    monkeypatch.setattr(home, "_PACKAGE", installed)
    monkeypatch.setenv("PROTOBENCH_HOME", " ")  # blank: unset
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert home.home() == tmp_path / "xdg" / "protobench"
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.delenv("XDG_DATA_HOME")
    assert home.home() == tmp_path / "user" / ".local" / "share" / "protobench"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # not absolute: ignored, as XDG says
    assert home.home() == tmp_path / "user" / ".local" / "share" / "protobench"

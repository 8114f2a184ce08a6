"""First contact: what --help imports, the command table, completion, PROTOBENCH_HOME, --version.

The help path runs the real ``python -m protobench`` in a subprocess and reads
the modules it imported: no numpy, pydantic, psutil, textual, uvloop,
rich or protocol library, no protocol plugin and no engine beyond its plain
data modules (issue 21: ``--help`` was 1.3 s under load because every command
imported all of them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from protobench.cli import COMMANDS, app, boundary
from protobench.cli.version import checkout_root, version_line
from protobench.engine.sweep import DEFAULT_STOP
from protobench.home import ENV
from protobench.snapshots.store import DEFAULT_DIR, DEFAULT_LOGS, SnapshotStore

HEAVY = {
    "numpy",
    "scipy",
    "pydantic",
    "psutil",
    "textual",
    "uvloop",
    "rich",
    "hdrh",
    "anyio",
    "bac_py",
    "hs_py",
    "websockets",
    "httptools",
    "paho",
    "orjson",
    "cryptography",
    "ray",
}
"""Third-party modules the help path must not import."""

LIGHT = {
    "protobench.engine",
    "protobench.engine.events",
    "protobench.engine.figures",
    "protobench.engine.report_model",
    "protobench.engine.stacks",
    "protobench.engine.stacks.model",
    "protobench.engine.summaries",
    "protobench.engine.thinning",
    "protobench.engine.thresholds",
    "protobench.protocols",
    "protobench.protocols.flags",
    "protobench.protocols.http",
    "protobench.protocols.http.flags",
    "protobench.protocols.oneline",
    "protobench.protocols.registry",
    "protobench.targets",
    "protobench.targets.registry",
}
"""Modules of the engine, protocols and targets that the help path may import (plain data)."""

_IMPORTED = """
import json, runpy, sys
sys.argv = ["protobench", *json.loads(sys.argv[1])]
try:
    runpy.run_module("protobench", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def imported(args: list[str]) -> tuple[int, set[str]]:
    """Exit code and modules of ``python -m protobench ARGS`` in a new interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(done.stdout.rstrip().splitlines()[-1])
    return result["code"], set(result["modules"])


def help_paths() -> list[list[str]]:
    """``[]`` (root), every command, and every command of a group."""
    paths: list[list[str]] = [[]]
    for name, entry in COMMANDS.items():
        paths.append([name])
        paths.extend([name, sub] for sub in getattr(entry.load(name), "commands", {}))
    return paths


def forbidden(modules: set[str]) -> list[str]:
    heavy = {m for m in modules if m.partition(".")[0] in HEAVY}
    ours = {
        m
        for m in modules
        if m.startswith(("protobench.engine", "protobench.protocols", "protobench.targets"))
        or m.startswith(("protobench.tui", "protobench.htmlreport", "protobench.profiles.loader"))
    }
    return sorted(heavy | (ours - LIGHT))


@pytest.mark.parametrize("path", help_paths(), ids=lambda p: " ".join(p) or "protobench")
def test_help_imports_no_heavy_module(path: list[str]) -> None:
    code, modules = imported([*path, "--help"])
    assert code == 0
    assert forbidden(modules) == []


def test_version_imports_no_heavy_module() -> None:
    code, modules = imported(["--version"])
    assert code == 0
    assert forbidden(modules) == []


def test_the_heavy_check_sees_a_heavy_import() -> None:
    """The check itself: a real command run imports what --help must not."""
    code, modules = imported(["profiles", "show", "http-get"])
    assert code == 0
    assert "pydantic" in modules
    assert "pydantic" in forbidden(modules)


def test_run_loads_only_the_chosen_protocol() -> None:
    code, modules = imported(["run", "http-get", "--duration", "0s"])  # exits 2 before a run
    assert code == 2
    assert "protobench.protocols.http.plugin" in modules
    for other in ("mqtt", "websocket", "bacnet_ip", "bacnet_sc", "haystack", "beckn"):
        assert f"protobench.protocols.{other}" not in modules
    assert not {"bac_py", "hs_py"} & {m.partition(".")[0] for m in modules}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_table_summary_is_the_commands_first_help_line(name: str) -> None:
    command = COMMANDS[name].load(name)
    assert (command.help or "").strip().splitlines()[0] == COMMANDS[name].summary


@pytest.mark.parametrize("path", help_paths()[1:], ids=" ".join)
def test_every_command_help_has_examples_and_exit_codes(path: list[str]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0
    if len(path) == 1 and "Commands:" in result.stdout:
        return  # a group: its commands carry the examples
    assert "Example" in result.stdout
    assert "Exit codes" in result.stdout
    assert "protobench " + " ".join(path) in result.stdout.split("Example", 1)[1]


def test_sweep_help_names_the_engines_default_stop() -> None:
    result = CliRunner().invoke(app, ["sweep", "--help"])
    assert " ".join(DEFAULT_STOP.split()) in " ".join(result.stdout.split())


# --- completion ----------------------------------------------------------------------------


def complete(words: str, cwd: Path, env: dict[str, str] | None = None) -> list[str]:
    """What bash completion offers for ``words`` (the last word is the one completed)."""
    parts = words.split(" ")
    done = subprocess.run(
        [sys.executable, "-m", "protobench"],
        env={
            **os.environ,
            **(env or {}),
            "_PROTOBENCH_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(parts) - 1),
        },
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.split()


def test_completion_of_profile_names_and_files(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text('name = "mine"\n')
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "more").mkdir()
    assert complete("protobench run mqtt-f", tmp_path) == ["mqtt-fanout"]
    assert complete("protobench sweep m", tmp_path) == [
        "mqtt-connections",
        "mqtt-fanout",
        "mqtt-qos1",
        "mqtt-throughput",
        "mine.toml",
        "more/",
    ]
    assert complete("protobench profiles show mi", tmp_path) == ["mine.toml"]
    assert complete("protobench profiles new x --from ws", tmp_path) == ["ws-echo"]


def test_completion_of_snapshot_refs(tmp_path: Path) -> None:
    store = tmp_path / "home" / "snapshots"
    store.mkdir(parents=True)
    ids = ["20260101-000000-a-0001", "20260102-000000-b-0002", "20260103-000000-c-0003"]
    for run in ids:
        (store / f"{run}.json.gz").write_bytes(b"")
    home = {ENV: str(tmp_path / "home")}
    assert complete("protobench replay lat", tmp_path, home) == ["latest", "latest~1", "latest~2"]
    assert complete("protobench diff latest~1 2026010", tmp_path, home) == ids[::-1]
    assert complete("protobench report 20260102", tmp_path, home) == [ids[1]]
    other = f"protobench snapshots show --snapshots-dir {store} latest~"
    assert complete(other, tmp_path) == ["latest~1", "latest~2"]


def test_show_completion_prints_a_script(tmp_path: Path) -> None:
    # The shell is named, not detected from the parent process (under make, `sh`, which
    # Typer refuses): its own switch for that makes --show-completion take the shell.
    clean = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "protobench", "--show-completion", "bash"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=clean,  # what earlier tests left in this process's environment stays out
    )
    assert done.returncode == 0, done.stderr
    assert "_PROTOBENCH_COMPLETE=complete_bash" in done.stdout


# --- PROTOBENCH_HOME ------------------------------------------------------------------------


def test_store_and_logs_default_to_dot_protobench(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    store = SnapshotStore()
    assert (store.directory, store.logs) == (DEFAULT_DIR, DEFAULT_LOGS)
    assert Path(".protobench") / "snapshots" == DEFAULT_DIR


def test_protobench_home_holds_the_store_and_logs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(ENV, str(tmp_path / "pb"))
    store = SnapshotStore()
    assert store.directory == tmp_path / "pb" / "snapshots"
    assert store.logs == tmp_path / "pb" / "logs"
    given = SnapshotStore(tmp_path / "elsewhere")
    assert given.logs == tmp_path / "elsewhere" / "logs"


def test_crash_logs_go_to_protobench_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV, str(tmp_path / "pb"))
    log = boundary.crash_log(RuntimeError("boom"))
    assert log is not None
    assert log.parent == tmp_path / "pb" / "logs"


def test_snapshots_list_reads_protobench_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ENV, str(tmp_path / "pb"))
    (tmp_path / "pb" / "snapshots").mkdir(parents=True)
    (tmp_path / "pb" / "snapshots" / "20260101-000000-x-0001.json.gz").write_bytes(b"not gzip")
    result = CliRunner().invoke(app, ["snapshots", "list"])
    assert "20260101-000000-x-0001" in result.stderr  # read (and skipped as bad) from the home
    assert not (tmp_path / ".protobench").exists()


# --- --version ------------------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_version_of_a_development_install_names_the_commit(tmp_path: Path) -> None:
    package = tmp_path / "src" / "protobench"
    package.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "pyproject.toml")
    _git(tmp_path, "commit", "-qm", "x")
    head = _git(tmp_path, "rev-parse", "--short=12", "HEAD")
    assert checkout_root(package) == tmp_path.resolve()
    assert version_line(package).endswith(f" (git {head})")
    (tmp_path / "pyproject.toml").write_text("changed")
    assert version_line(package).endswith(f" (git {head}-dirty)")


def test_version_of_an_installed_package_is_the_release(tmp_path: Path) -> None:
    package = tmp_path / "lib" / "site-packages" / "protobench"
    package.mkdir(parents=True)
    _git(tmp_path, "init", "-q")  # a venv inside someone's repository: not our commit
    assert checkout_root(package) is None
    assert "git" not in version_line(package)


def test_version_flag_of_this_checkout() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "protobench", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.startswith("protobench ")
    import protobench  # noqa: PLC0415

    if checkout_root(Path(protobench.__file__).parent) is not None:
        assert " (git " in done.stdout

"""The documentation site builds with warnings as errors, and a broken link fails it (issue 29).

``mkdocs build --strict`` is what ``make test`` runs through this file: a link to a
page or an anchor that does not exist, a page missing from the navigation or a
snippet whose file is gone stops the build.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from protobench.cli import COMMANDS
from protobench.profiles.settings import SETTINGS
from protobench.snapshots.schemas import profile_schema
from protobench.targets import registry

ROOT = Path(__file__).resolve().parents[1]
SITE_FILES = (
    "mkdocs.yml",
    "docs",
    "CHANGELOG.md",
    "bench/README.md",
    "scripts/docs_reference.py",
)
"""What the build reads: the config, the pages, the files they include, the generator."""
GENERATOR = ROOT / "scripts" / "docs_reference.py"


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the site at ``root`` into ``site``."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def copy_site(to: Path) -> Path:
    """A copy of what the build reads, to break on purpose."""
    for name in SITE_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, to / name)
        else:
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    return to


def test_the_site_builds_strict(tmp_path: Path) -> None:
    result = build(ROOT, tmp_path / "site")
    assert result.returncode == 0, result.stderr
    pages = ("index", "getting-started/install", "protocols/mqtt", "guide/monitor")
    for page in (*pages, "reference/cli", "reference/profile"):
        assert (tmp_path / "site" / f"{page}.html").is_file()


@pytest.mark.parametrize(
    ("link", "named"),
    [("../guide/nowhere.md", "nowhere.md"), ("exit-codes.md#no-such-heading", "no-such-heading")],
    ids=["page", "anchor"],
)
def test_a_broken_link_fails_the_build(link: str, named: str, tmp_path: Path) -> None:
    root = copy_site(tmp_path / "copy")
    page = root / "docs" / "concepts" / "verdicts.md"
    page.write_text(page.read_text() + f"\nSee [there]({link}).\n")
    result = build(root, tmp_path / "site")
    assert result.returncode != 0
    assert named in result.stderr


def generated(name: str) -> str:
    """A reference page as the build generates it."""
    spec = importlib.util.spec_from_file_location("docs_reference", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.PAGES[name]()
    return text


def test_the_cli_reference_has_every_command_and_every_targets_options() -> None:
    text = generated("cli.md")
    for name, entry in COMMANDS.items():
        assert f"## protobench {name}\n" in text
        for sub in getattr(entry.load(name), "commands", {}):
            assert f"### protobench {name} {sub}\n" in text
    for target in registry.names():
        assert f"### {target}\n" in text
    assert "| `--delay DURATION` | delay of every response  [default: 0s] |" in text


def test_the_profile_reference_has_every_key_of_the_schema_and_every_setting() -> None:
    text = generated("profile.md")
    schema = profile_schema()
    for key in [*schema["properties"], *schema["definitions"]["GroupSpec"]["properties"]]:
        assert f"| `{key}` |" in text, key
    for setting in SETTINGS:
        row = next(line for line in text.splitlines() if line.startswith(f"| `{setting.name}` |"))
        if setting.env:
            assert f"`{setting.env}`" in row
        if setting.flag:
            assert f"`{setting.flag}`" in row

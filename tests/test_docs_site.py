"""The documentation site builds with warnings as errors, and a broken link fails it (issue 29).

``mkdocs build --strict`` is what ``make test`` runs through this file: a link to a
page or an anchor that does not exist, a page missing from the navigation or a
snippet whose file is gone stops the build.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE_FILES = ("mkdocs.yml", "docs", "CHANGELOG.md", "bench/README.md")
"""What the build reads: the config, the pages, and the files the pages include."""


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
    for page in ("index", "getting-started/install", "protocols/mqtt", "guide/monitor"):
        assert (tmp_path / "site" / f"{page}.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    root = copy_site(tmp_path / "copy")
    page = root / "docs" / "concepts" / "verdicts.md"
    page.write_text(page.read_text() + "\nSee [nowhere](../guide/nowhere.md).\n")
    result = build(root, tmp_path / "site")
    assert result.returncode != 0
    assert "nowhere.md" in result.stderr


def test_a_broken_anchor_fails_the_build(tmp_path: Path) -> None:
    root = copy_site(tmp_path / "copy")
    page = root / "docs" / "concepts" / "verdicts.md"
    page.write_text(page.read_text() + "\nSee [codes](exit-codes.md#no-such-heading).\n")
    result = build(root, tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-heading" in result.stderr

"""The tests mirror ``src/protobench``: each directory of tests is a package or module there.

``tests/engine/test_schedule_*.py`` test ``engine/schedule.py``; besides the
mirror there are only ``tests/cli/`` (commands and whole runs through
``python -m protobench``) and ``tests/support/`` (helpers, imported as
``tests.support.NAME``). Real servers and whole runs carry the ``integration``
marker, wherever they are.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
SOURCE = TESTS.parent / "src" / "protobench"
OUTSIDE_THE_MIRROR = {Path("cli"), Path("support")}


def _mirrored(directory: Path) -> bool:
    source = SOURCE / directory
    return source.is_dir() or source.with_suffix(".py").is_file()


def test_every_test_directory_mirrors_the_source() -> None:
    directories = {path.parent.relative_to(TESTS) for path in TESTS.rglob("test_*.py")}
    stray = sorted(
        str(d)
        for d in directories
        if d != Path() and d.parts[0] != "support" and d not in OUTSIDE_THE_MIRROR
        if not _mirrored(d)
    )
    assert stray == [], f"test directories with no src/protobench counterpart: {stray}"


def test_every_test_directory_is_a_package() -> None:
    """Packages give same-named files (``test_codec.py`` of each protocol) distinct modules."""
    missing = sorted(
        str(path.parent.relative_to(TESTS))
        for path in TESTS.rglob("test_*.py")
        if not (path.parent / "__init__.py").is_file()
    )
    assert missing == []

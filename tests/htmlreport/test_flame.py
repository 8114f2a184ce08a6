"""The flame graph's data in the page: bounded, escaped, the waiting stacks marked."""

from __future__ import annotations

import json
import re

from protobench.engine.stacks.model import Frame, StackCounter, TargetProfile
from protobench.htmlreport import flame


def _data(section: str, graph: str = "flame-run") -> dict[str, object]:
    found = re.search(rf"<script type='application/json' id='{graph}'>(.*?)</script>", section)
    assert found is not None
    loaded: dict[str, object] = json.loads(found.group(1))
    return loaded


def test_a_hostile_frame_name_cannot_close_the_script_or_add_markup() -> None:
    counter = StackCounter()
    evil = Frame(name="</script><script>alert(1)</script>", file="<b>x.py</b>")
    counter.add([evil], 5)
    section = flame.profile_section(TargetProfile(tool="py-spy", cpu=counter.profile()), "1%")
    assert "<script>alert(1)" not in section
    assert "<b>x.py" not in section
    assert _data(section)["c"][0]["n"].startswith("</script>")  # type: ignore[index]


def test_the_tree_is_bounded_and_keeps_every_sample_in_its_widths() -> None:
    counter = StackCounter(limit=100_000)
    root = Frame(name="main", file="app.py")
    for i in range(20_000):
        counter.add([root, Frame(name=f"f{i}", file="gen.py")], 1)
    counter.add([root, Frame(name="big", file="gen.py")], 20_000)
    section = flame.profile_section(TargetProfile(tool="py-spy", cpu=counter.profile()), "")
    data = _data(section)
    main = data["c"][0]  # type: ignore[index]
    assert main["v"] == 40_000
    assert [c["n"] for c in main["c"]] == ["big (gen.py)"]  # the 20,000 small ones fold in
    assert main["s"] == 20_000
    assert len(section) < 200_000


def test_waiting_stacks_are_marked_and_can_be_hidden() -> None:
    counter = StackCounter()
    counter.add([Frame(name="main"), Frame(name="select", file="selectors.py")], 9, idle=True)
    counter.add([Frame(name="main"), Frame(name="work")], 1)
    section = flame.profile_section(TargetProfile(tool="py-spy", cpu=counter.profile()), "")
    assert "hide waiting stacks" in section
    waiting = [c for c in _data(section)["c"] if c.get("w")]  # type: ignore[attr-defined]
    assert [c["v"] for c in waiting] == [9]

"""The target profile's model: shares per function and module, bounded stacks, clean names."""

from __future__ import annotations

from protobench.engine.stacks.model import (
    OTHER,
    Frame,
    StackCounter,
    TargetProfile,
    clean,
    function_shares,
    merged,
    module_shares,
    share_changes,
    summarize,
)

MAIN = Frame(name="main", file="app.py", line=1, module="app")
HANDLE = Frame(name="handle", file="app.py", line=10, module="app")
PARSE = Frame(name="parse", file="lib/codec.py", line=5, module="lib.codec")
WAIT = Frame(name="select", file="selectors.py", line=3, module="selectors")


def profile(*stacks: tuple[list[Frame], int, bool]) -> TargetProfile:
    counter = StackCounter()
    for frames, count, idle in stacks:
        counter.add(frames, count, idle)
    return TargetProfile(tool="py-spy", rate=100.0, cpu=counter.profile())


def test_self_and_total_shares_are_of_the_running_samples() -> None:
    made = profile(
        ([MAIN, HANDLE, PARSE], 30, False),
        ([MAIN, HANDLE], 10, False),
        ([MAIN, WAIT], 60, True),
    )
    shares = {f.function: f for f in function_shares(made.cpu)}
    assert made.cpu.samples == 100
    assert made.cpu.running == 40
    assert shares["parse"].self_share == 0.75
    assert shares["handle"].self_share == 0.25
    assert shares["handle"].total_share == 1.0
    assert shares["main"].self_samples == 0
    assert "select" not in shares  # a waiting stack is no one's CPU
    summary = summarize(made, "cost")
    assert summary.idle_share == 0.6
    assert [f.function for f in summary.top[:2]] == ["parse", "handle"]
    assert [(m.module, m.share) for m in summary.modules] == [("lib.codec", 0.75), ("app", 0.25)]


def test_recursion_counts_a_sample_once_in_a_total() -> None:
    made = profile(([MAIN, HANDLE, HANDLE, HANDLE], 4, False), ([MAIN], 4, False))
    handle = next(f for f in function_shares(made.cpu) if f.function == "handle")
    assert handle.total_samples == 4
    assert handle.total_share == 0.5


def test_modules_group_the_functions_self_time() -> None:
    made = profile(([MAIN, PARSE], 3, False), ([MAIN, HANDLE], 1, False), ([PARSE], 4, False))
    assert [(m.module, m.samples) for m in module_shares(made.cpu)] == [
        ("lib.codec", 7),
        ("app", 1),
    ]


def test_the_counter_keeps_at_most_its_limit_of_stacks_and_every_sample() -> None:
    counter = StackCounter(limit=10)
    for i in range(1000):
        counter.add([MAIN, Frame(name=f"f{i}", file="gen.py")], 1 + (i % 3))
    kept = counter.profile()
    assert len(kept.stacks) <= 10
    assert kept.samples == sum(1 + (i % 3) for i in range(1000))
    assert any(kept.frames[s.frames[0]].name == OTHER for s in kept.stacks)
    assert len(kept.frames) <= 10 + 2  # only the frames of the kept stacks


def test_merged_profiles_add_their_counts() -> None:
    one = profile(([MAIN, PARSE], 3, False)).cpu
    two = profile(([MAIN, PARSE], 2, False), ([MAIN, WAIT], 5, True)).cpu
    both = merged([one, two])
    assert both.samples == 10
    assert both.running == 5


def test_share_changes_put_the_largest_change_first() -> None:
    base = profile(([MAIN, HANDLE], 90, False), ([MAIN, PARSE], 10, False)).cpu
    new = profile(
        ([MAIN, HANDLE], 50, False), ([MAIN, PARSE], 10, False), ([MAIN, WAIT], 40, False)
    ).cpu
    changes = share_changes(base, new)
    assert changes[0].function in ("handle", "select")
    by_name = {c.function: c for c in changes}
    assert by_name["select"].base_self == 0.0
    assert by_name["select"].self_change == 0.4
    assert by_name["handle"].self_change == round(50 / 100 - 0.9, 4)


def test_names_from_a_target_are_kept_but_bounded() -> None:
    assert clean("evil\x1b[31mred\x07") == "evil\x1b[31mred\x07"  # termtext shows it, later
    assert len(clean("x" * 5000)) == 300
    assert clean("x" * 5000).endswith("…")

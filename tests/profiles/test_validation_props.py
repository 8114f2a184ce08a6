"""Validation is total: any profile or flag either gives a sane plan or exits 2 with one line.

Property-based (hypothesis): every built-in profile is mutated (wrong types,
nan/inf/0/negative, huge values, tables for scalars, removed keys) and loaded
through the real loader and plan resolution; run and sweep flags get hostile
values through the real CLI. Nothing may raise anything but a located
``ProfileError``; what is accepted must be runnable (finite, positive, in range).
"""

from __future__ import annotations

import math
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from protobench.cli import app, run_cmd
from protobench.engine.plan import Overrides, RunPlan, resolve
from protobench.profiles import loader
from protobench.vocab.units import MAX_DURATION, MAX_RATE
from tests.support.mutations import (
    EXAMPLES,
    REMOVE,
    hostile_values,
    key_paths,
    mutate,
    to_toml,
)

BUILTINS = loader.builtin_names()
DATA = {name: tomllib.loads(loader.builtin_text(name)) for name in BUILTINS}
ACCEPTED = 99
"""Exit code of the stubbed run: the plan was accepted."""


def assert_sane(plan: RunPlan) -> None:
    """What a worker needs of an accepted plan."""
    for value in (plan.warmup, plan.duration, plan.interval, plan.timeout, plan.drain):
        assert math.isfinite(value)
        assert 0 <= value <= MAX_DURATION
    assert plan.duration > 0
    assert plan.timeout > 0
    assert 0.05 <= plan.interval <= 60
    assert 1 <= plan.processes <= 256
    for rate in (plan.rate, plan.ramp_to):
        assert rate is None or (math.isfinite(rate) and 0 < rate <= MAX_RATE)
    for group in plan.groups:
        assert 1 <= group.count <= 1_000_000
        assert group.every is None or (math.isfinite(group.every) and group.every > 0)
        assert math.isfinite(group.share)
        assert group.share > 0
    assert "/" not in plan.profile
    assert not plan.profile.startswith(".")


def assert_one_line_error(message: str, source: str) -> None:
    assert "\n" not in message.strip(), message
    assert "Traceback" not in message
    assert loader.PLUGIN_BUG not in message, message
    assert message.startswith(source), message


@st.composite
def mutated_profiles(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(BUILTINS))
    data = DATA[name]
    path = draw(st.sampled_from(key_paths(data)))
    value = draw(st.one_of(hostile_values, st.just(REMOVE)))
    return name, mutate(data, path, value)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_profiles())
def test_mutated_builtin_profiles_load_sanely_or_fail_on_one_line(
    case: tuple[str, dict[str, Any]],
) -> None:
    _, data = case
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "mutated.toml"
        path.write_text(to_toml(data), encoding="utf-8")
        try:
            plan = resolve(loader.load(str(path)), Overrides())
        except loader.ProfileError as exc:
            assert_one_line_error(str(exc), str(path))
            return
    assert_sane(plan)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("duration", "nan", "duration: expected a duration"),
        ("duration", "inf", "duration: expected a duration"),
        ("duration", "[1, 2]", "duration: expected a duration such as '30s' or '500ms', got list"),
        ("warmup", "{a = 1}", "warmup: expected a duration"),
        ("timeout", '"0s"', "timeout: expected a timeout > 0"),
        ("rate", "[5]", "rate: expected a rate"),
        ("rate", "nan", "rate: expected a rate"),
        ("rate", '"0/s"', "rate: expected a rate > 0"),
        ("interval", "nan", "interval: expected a duration"),
        ("interval", '"0s"', "interval: expected an interval between 50ms and 60s"),
        ("processes", "1e9", "processes: Input should be less than or equal to 256"),
        ("name", '"../../../escaped"', "name: expected a name of letters"),
        ("name", '"a/b"', "name: expected a name of letters"),
        ("name", '".hidden"', "name: expected a name of letters"),
    ],
)
def test_hostile_top_keys_name_the_key_and_line(
    tmp_path: Path, key: str, value: str, expected: str
) -> None:
    text = loader.builtin_text("http-get")
    lines = [line for line in text.splitlines() if not line.startswith(f"{key} =")]
    lines.insert(1, f"{key} = {value}")
    path = tmp_path / "bad.toml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(loader.ProfileError) as caught:
        resolve(loader.load(str(path)), Overrides())
    assert str(caught.value).startswith(f"{path}:2: {expected}"), str(caught.value)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('every = "0s"', "group[0].every: expected a period > 0"),
        ("every = nan", "group[0].every: expected a duration"),
        ("share = inf", "group[0].share: Input should be a finite number"),
        ("share = [1]", "group[0].share: Input should be a valid number"),
    ],
)
def test_hostile_group_keys_are_located(tmp_path: Path, line: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(loader.builtin_text("http-get").replace("[[group]]", f"[[group]]\n{line}"))
    with pytest.raises(loader.ProfileError, match=r"bad\.toml:\d+: ") as caught:
        resolve(loader.load(str(path)), Overrides())
    assert expected in str(caught.value)


# --- the CLI ---------------------------------------------------------------------------

RUN_FLAGS = {
    "--duration": st.sampled_from(["0s", "-1s", "nan", "inf", "1e999s", "", "5", "1h", "31d"]),
    "--warmup": st.sampled_from(["nan", "-2s", "0s", "1e400", "99999999999h"]),
    "--interval": st.sampled_from(["0s", "1us", "nan", "61s", "10ms", "1s"]),
    "--timeout": st.sampled_from(["0s", "nan", "abc", "1ms"]),
    "--rate": st.sampled_from(["0/s", "-5/s", "nan", "inf", "1e999/s", "20000000/s", "abc"]),
    "--ramp-to": st.sampled_from(["0/s", "nan", "100/s"]),
    "--connections": st.sampled_from(["0", "-1", "abc", "1.5", "10000000", "99999999999999999999"]),
    "--processes": st.sampled_from(["0", "-1", "257", "abc", "999999999999"]),
    "--target-pid": st.sampled_from(["0", "-1", "abc"]),
    "--target": st.sampled_from(
        ["gopher://x", "http://u:PW@127.0.0.1/", "", "embedded:nosuch", "mqtt://127.0.0.1"]
    ),
    "--opt": st.sampled_from(["nokey", "=1", "insecure=5", "bogus=1", "insecure=NaN", "x"]),
    "--serve-opt": st.sampled_from(
        ["delay=abc", "delay=NaN", "delay=1e999", "delay=[1]", "bogus=1", "delay"]
    ),
    "--threshold": st.sampled_from(["p98 < 1ms", "error_rate < abc", "", "p99 <"]),
}
"""Flag values that are wrong in one way each (a few are right: the plan is then checked)."""


FIXTURE_OK = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
"""The stub fixture keeps the last plan only: sharing it between examples is harmless."""


@pytest.fixture
def stub_runs(monkeypatch: pytest.MonkeyPatch) -> list[RunPlan]:
    """Runs never start: the plan is recorded and the command exits :data:`ACCEPTED`."""
    plans: list[RunPlan] = []

    def accept(plan: RunPlan, *args: Any, **kwargs: Any) -> dict[str, Any]:
        plans[:] = [plan]
        raise SystemExit(ACCEPTED)

    monkeypatch.setattr(run_cmd, "run_plan", accept)  # a sweep's levels run through it too
    return plans


def assert_cli_outcome(args: list[str], plans: list[RunPlan]) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), args
    if result.exit_code == ACCEPTED:
        assert_sane(plans[-1])
        return
    assert result.exit_code == 2, (args, result.exit_code, result.stderr)
    assert_one_line_error(result.stderr, "protobench: error: ")
    assert "PW" not in result.stderr


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=FIXTURE_OK)
@given(
    profile=st.sampled_from(["http-get", "mqtt-fanout", "ws-echo", "bacnet-ip"]),
    flags=st.lists(
        st.sampled_from(sorted(RUN_FLAGS)).flatmap(
            lambda flag: RUN_FLAGS[flag].map(lambda value: (flag, value))
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_hostile_run_flags_exit_2_on_one_line(
    stub_runs: list[RunPlan], profile: str, flags: list[tuple[str, str]]
) -> None:
    args = ["run", profile, "--no-tui", "--quiet"]
    for flag, value in flags:
        args += [flag, value]
    assert_cli_outcome(args, stub_runs)


@settings(max_examples=max(20, EXAMPLES // 5), deadline=None, suppress_health_check=FIXTURE_OK)
@given(
    vary=st.sampled_from(
        [
            "connections=0,5",
            "rate=nan,100/s",
            "interval=0s",
            "duration=1s,-1s",
            "serve.delay=abc",
            "options.bogus=1",
            "nosuch=1",
            "connections=",
            "=1",
            "connections=abc",
        ]
    )
)
def test_hostile_sweep_levels_exit_2_on_one_line(stub_runs: list[RunPlan], vary: str) -> None:
    assert_cli_outcome(["sweep", "http-get", "--vary", vary, "--quiet"], stub_runs)


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "http", "--delay", "abc"],
        ["serve", "http", "--port", "-1"],
        ["serve", "http", "--port", "70000"],
        ["serve", "http", "--host", "10.0.0.1"],
        ["serve", "nosuch"],
        ["profiles", "show", "nosuch"],
        ["profiles", "new", "../escaped"],
        ["profiles", "new", "mine", "--from", "nosuch"],
        ["run", "nosuch-profile"],
        ["run", "http-get", "--bogus-flag"],
    ],
)
def test_bad_commands_exit_2_on_one_line(args: list[str], stub_runs: list[RunPlan]) -> None:
    assert_cli_outcome(args, stub_runs)
    assert not stub_runs

"""The run settings are one table: the profile model, the plan, the flags and the docs follow it."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest
from typer.testing import CliRunner

from protobench.cli import COMMANDS, app
from protobench.cli.run_flags import RunFlags
from protobench.engine.plan import RunPlan, resolve
from protobench.profiles import loader
from protobench.profiles.model import Profile, ProfileKeys
from protobench.profiles.settings import FLAGGED, SETTINGS, VARY_KEYS, Overrides, RunSettings
from protobench.protocols.oneline import FLAGS

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide"
NAMES = [s.name for s in SETTINGS]


def _page(name: str) -> str:
    return (GUIDE / f"{name}.md").read_text()


def test_the_profile_model_is_its_own_keys_then_every_setting_with_its_default() -> None:
    assert list(Profile.model_fields) == [*ProfileKeys.model_fields, *NAMES]
    for setting in fields(RunSettings):
        default = Profile.model_fields[setting.name].get_default(call_default_factory=True)
        assert default == getattr(RunSettings(), setting.name), setting.name


def test_the_plan_has_every_setting_first() -> None:
    assert [f.name for f in fields(RunPlan)][: len(NAMES)] == NAMES


def test_a_plan_from_an_old_snapshot_gets_the_defaults_of_the_settings_it_lacks() -> None:
    plan = resolve(loader.load("http-get"), Overrides())
    old = {k: v for k, v in plan.to_dict().items() if k not in ("pacing_precision", "connections")}
    again = RunPlan.from_dict(old)
    assert again.pacing_precision == RunSettings().pacing_precision
    assert again.connections is None
    assert again.duration == plan.duration


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_every_flag_of_the_table_is_an_option_of_run_and_sweep(command: str) -> None:
    options = {p.name: p for p in COMMANDS[command].load(command).params}
    for setting in FLAGGED:
        option = options[setting.name]
        assert tuple(option.opts) == setting.names
        assert option.secondary_opts == []
        assert option.help == setting.help
        assert option.multiple == setting.kind.repeatable


def test_flags_become_overrides_that_add_to_the_profile(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        'name = "t"\nprotocol = "http"\ntarget = "http://127.0.0.1:9/"\n'
        'thresholds = ["p99 < 1s"]\n[options]\ninsecure = true\n'
        '[[group]]\nop = "request"\ncount = 2\n'
    )
    flags = RunFlags(
        {
            "duration": "3s",
            "connections": 5,
            "thresholds": ["error_rate < 1%"],
            "options": ['secret_headers=["X-A"]'],
            "rate": None,
        }
    )
    overrides = flags.overrides()
    assert overrides.as_dict() == {
        "duration": 3.0,
        "connections": 5,
        "thresholds": ("error_rate < 1%",),
        "options": {"secret_headers": ["X-A"]},
    }
    plan = resolve(loader.load(str(profile)), overrides)
    assert plan.duration == 3.0
    assert plan.groups[0].count == 5
    assert plan.thresholds == ("p99 < 1s", "error_rate < 1%")
    assert plan.options == {"insecure": True, "secret_headers": ["X-A"]}


def test_overrides_take_only_setting_names_and_skip_what_was_not_given() -> None:
    with pytest.raises(TypeError, match="not a run setting: colour"):
        Overrides(colour="red")
    assert Overrides(rate=None, thresholds=(), options={}, duration=0.0).as_dict() == {
        "duration": 0.0
    }


def test_sweep_varies_what_the_table_says() -> None:
    result = CliRunner().invoke(app, ["sweep", "--help"])
    assert ", ".join(VARY_KEYS) in " ".join(result.stdout.split())
    assert "options.KEY" in VARY_KEYS


def _flag_cells(section: str) -> str:
    rows = [line for line in section.splitlines() if line.startswith("| `-")]
    return "\n".join(row.split("|")[1] for row in rows)


def test_the_run_page_lists_every_run_flag_with_its_short_flag_and_placeholder() -> None:
    cells = _flag_cells(_page("run"))
    for setting in FLAGGED:
        assert f"`{f'{", ".join(setting.names)} {setting.metavar}'.strip()}`" in cells, setting.name


def test_the_one_line_page_lists_every_one_line_flag_with_its_names_and_placeholder() -> None:
    cells = _flag_cells(_page("one-line-runs"))
    for flag in FLAGS:
        names = ", ".join(flag.names) + (f" {flag.metavar}" if flag.metavar else "")
        assert f"`{names}`" in cells, flag.name


def test_the_sweep_page_names_every_axis_and_run_flag() -> None:
    text = " ".join(_page("sweep").split())
    axes = re.search(r"Axes: (.*?)\. The first", text)
    assert axes is not None
    assert re.findall(r"`([^`]+)`", axes.group(1)) == list(VARY_KEYS)
    flags = re.search(r"The run flags of `protobench run` \(`([^`]+)`\)", text)
    assert flags is not None
    assert flags.group(1).split() == [s.flag for s in FLAGGED]


def test_the_profiles_page_example_has_every_setting() -> None:
    example = _page("profiles").split("```toml", 1)[1].split("```", 1)[0]
    keys = re.findall(r"^(?:# )?(\w+) = ", example, re.MULTILINE)
    tables = re.findall(r"^\[(\w+)\]", example, re.MULTILINE)
    assert set(NAMES) <= {*keys, *tables}


def test_every_single_valued_flag_has_its_environment_variable() -> None:
    envs = {s.name: s.env for s in FLAGGED}
    assert envs["target"] == "PROTOBENCH_TARGET"
    assert envs["duration"] == "PROTOBENCH_DURATION"
    assert envs["thresholds"] is None  # repeatable: an expression holds spaces
    text = " ".join(CliRunner().invoke(app, ["run", "--help"]).stdout.split())
    for setting in FLAGGED:
        if setting.env:
            assert f"env var: {setting.env}" in text, setting.name


def test_a_bad_value_from_the_environment_names_its_variable() -> None:
    result = CliRunner().invoke(app, ["run", "http-get"], env={"PROTOBENCH_DURATION": "abc"})
    assert result.exit_code == 2
    assert "--duration (from $PROTOBENCH_DURATION): expected a duration" in result.stderr


def test_a_flag_wins_over_its_environment_variable() -> None:
    # The bad duration in the environment is not read: the error is the interval's.
    result = CliRunner().invoke(
        app, ["run", "http-get", "-d", "5s", "--interval", "0s"], env={"PROTOBENCH_DURATION": "abc"}
    )
    assert result.exit_code == 2
    assert "PROTOBENCH_DURATION" not in result.stderr
    assert "--interval" in result.stderr

"""Profile validation: every mistake names the file, the key and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from protobench.engine.plan import Overrides, resolve
from protobench.profiles import loader

GOOD = """\
name = "t"
protocol = "http"
warmup = "1s"
duration = "2s"
thresholds = ["error_rate < 1%"]

[[group]]
name = "get"
op = "request"
count = 4
path = "/"
"""


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "p.toml"
    path.write_text(text)
    return str(path)


def test_good_profile_resolves_with_overrides(tmp_path: Path) -> None:
    plan = resolve(
        loader.load(_write(tmp_path, GOOD)),
        Overrides(connections=10, duration=5.0, target="http://127.0.0.1:9/"),
    )
    assert plan.duration == 5.0
    assert plan.groups[0].count == 10
    assert plan.target == "http://127.0.0.1:9/"
    assert plan.model == "closed"
    assert plan.overrides["connections"] == 10


@pytest.mark.parametrize(
    ("change", "key", "expected", "line"),
    [
        (("count = 4", "cuont = 4"), "group[0].cuont", "unknown key", 10),
        (("count = 4", 'count = "four"'), "group[0].count", "integer", 10),
        (('duration = "2s"', 'duration = "2 sec"'), "duration", "expected a duration", 4),
        (('protocol = "http"', 'protocol = "gopher"'), "protocol", "unknown protocol", 2),
        (('op = "request"', 'op = "fetch"'), "group[0].op", "unknown operation", 9),
        (('path = "/"', "path = 5"), "group[0].path", "string", 11),
        (('"error_rate < 1%"', '"p98 < 1ms"'), "thresholds", "unknown threshold metric", 5),
    ],
)
def test_bad_profiles_are_located(
    tmp_path: Path, change: tuple[str, str], key: str, expected: str, line: int
) -> None:
    source = _write(tmp_path, GOOD.replace(*change))
    with pytest.raises(loader.ProfileError) as caught:
        loader.load(source)
    message = str(caught.value)
    assert message.startswith(f"{source}:{line}: {key}:"), message
    assert expected in message


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    source = _write(tmp_path, GOOD + "oops = \n")
    with pytest.raises(loader.ProfileError, match=r"p\.toml:\d+: invalid TOML"):
        loader.load(source)


def test_missing_profile_lists_the_builtins() -> None:
    with pytest.raises(loader.ProfileError, match=r"built-ins: .*http-get"):
        loader.load("no-such-profile")


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("mqtt://127.0.0.1:1883", "expected an http:// or https:// URL"),
        ("127.0.0.1:8080", "expected an http:// or https:// URL"),
    ],
)
def test_wrong_target_is_bad_input(tmp_path: Path, target: str, expected: str) -> None:
    with pytest.raises(loader.ProfileError) as caught:
        resolve(loader.load(_write(tmp_path, GOOD)), Overrides(target=target))
    assert str(caught.value).startswith("--target: target: ")
    assert expected in str(caught.value)


def test_profile_connections_key_rescales_the_groups(tmp_path: Path) -> None:
    plan = resolve(loader.load(_write(tmp_path, GOOD + "\n")), Overrides())
    assert plan.groups[0].count == 4
    text = GOOD.replace('duration = "2s"', 'duration = "2s"\nconnections = 9')
    plan = resolve(loader.load(_write(tmp_path, text)), Overrides())
    assert plan.groups[0].count == 9


def test_a_plugin_check_that_raises_is_still_a_located_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from protobench.protocols.http.options import RequestParams  # noqa: PLC0415

    def broken(cls: object, value: object) -> object:
        raise TypeError("unhashable")

    monkeypatch.setattr(RequestParams, "model_validate", classmethod(broken))
    source = _write(tmp_path, GOOD)
    with pytest.raises(loader.ProfileError) as caught:
        loader.load(source)
    assert str(caught.value).startswith(f"{source}:7: group[0]: a value the plugin cannot check")

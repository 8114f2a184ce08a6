"""RunPlan.redacted(): no secret of a target URL, an override or an option reaches a snapshot."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from protobench.cli import app
from protobench.engine.plan import Overrides, resolve
from protobench.profiles import loader

PW = "hunter2-PLAN"


@pytest.mark.parametrize(
    ("profile", "target"),
    [
        ("mqtt-fanout", f"mqtt://u:{PW}@127.0.0.1:1883"),
        ("mqtt-fanout", f"mqtts://u:{PW}@127.0.0.1:8883"),
        ("ws-echo", f"ws://u:{PW}@127.0.0.1:9000/echo"),
        ("ws-echo", f"wss://u:{PW}@[::1]:9443/echo"),
        ("ws-echo", f"ws://127.0.0.1:9000/echo?token={PW}"),
    ],
)
def test_target_url_secrets_are_redacted_everywhere_in_the_plan(profile: str, target: str) -> None:
    plan = resolve(loader.load(profile), Overrides(target=target))
    assert plan.target == target  # the run itself uses the secret
    stored = json.dumps(plan.redacted())
    assert PW not in stored
    assert plan.redacted()["target"].startswith(target.split(":", maxsplit=1)[0])


def test_secret_options_and_serve_overrides_are_redacted() -> None:
    plan = resolve(
        loader.load("haystack-http"),
        Overrides(options={"password": PW}, serve={"password": PW}),
    )
    stored = json.dumps(plan.redacted())
    assert PW not in stored
    assert plan.redacted()["overrides"]["options"]["password"] == "<secret>"


def test_secret_named_values_in_strings_with_urls_are_redacted() -> None:
    plan = resolve(
        loader.load("ws-echo"),
        Overrides(options={"origin": f"http://o:{PW}@127.0.0.1/", "headers": {"X-Token": PW}}),
    )
    assert PW not in json.dumps(plan.redacted())


def test_refused_credential_url_error_hides_the_password() -> None:
    with pytest.raises(loader.ProfileError) as caught:
        resolve(loader.load("http-get"), Overrides(target=f"http://u:{PW}@127.0.0.1:8080/"))
    assert PW not in str(caught.value)
    assert "--target" in str(caught.value)


@pytest.mark.parametrize(
    "args",
    [
        ["run", "http-get", "--target", f"http://u:{PW}@127.0.0.1:8080/"],
        ["run", "http-get", "--target", f"gopher://u:{PW}@127.0.0.1/"],
        ["run", "http-get", "--target", f"http://127.0.0.1:8080/?access_token={PW}"],
        ["run", "mqtt-fanout", "--target", f"mqtt://u:{PW}@127.0.0.1:1883", "--rate", "nan"],
    ],
)
def test_cli_errors_never_print_a_password(args: list[str]) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert PW not in result.stderr + result.stdout
    assert result.stderr.count("\n") == 1

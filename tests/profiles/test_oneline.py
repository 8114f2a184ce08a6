"""One-line runs without a server: the flag table, the URL's profile, its saved form, bad input.

The table's every key is one the plugin's own models take; every flag is an
option of ``run`` and ``sweep``; a URL's profile is what the flags say (a body
makes a POST, ``-H`` wins over ``-T``); a value a flag gave that the plugin
refuses is an error naming the flag (never the value of a secret one); a saved
profile loads to the same plan and holds no secret.
"""

from __future__ import annotations

import base64
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from protobench.cli import COMMANDS, app
from protobench.cli.run_flags import RunFlags
from protobench.engine.plan import RunPlan, resolve
from protobench.profiles import loader
from protobench.profiles.oneline import SOURCE, saved_profile, url_profile
from protobench.profiles.settings import FLAGGED, Overrides
from protobench.protocols import registry
from protobench.protocols.http.flags import FLAGS, connect_target
from protobench.protocols.http.options import read_headers
from protobench.protocols.http.plugin import connect_via
from protobench.protocols.oneline import LINES, for_url, is_url

URL = "http://127.0.0.1:9/api"


def _run(**line: Any) -> Any:
    return url_profile(URL, line)


def _params(**line: Any) -> dict[str, Any]:
    return _run(**line).loaded.profile.group[0].params


def test_every_key_a_flag_sets_is_one_of_the_plugins_models() -> None:
    for line in LINES:
        plugin = registry.load(line.protocol)
        models = {"options": plugin.options, "params": plugin.operations[line.op]}
        for flag in line.flags:
            assert set(flag.keys) <= set(models[flag.scope].model_fields), flag.name


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_every_one_line_flag_is_an_option_with_its_names(command: str) -> None:
    options = {p.name: p for p in COMMANDS[command].load(command).params}
    for flag in FLAGS:
        assert tuple(options[flag.name].opts) == flag.names
        assert options[flag.name].help == flag.help
    names = [n for s in FLAGGED for n in s.names] + [n for f in FLAGS for n in f.names]
    assert len(names) == len(set(names))


def test_urls_are_told_from_profiles_and_their_scheme_picks_the_protocol() -> None:
    assert is_url("http://x/")
    assert is_url("HTTPS://x:1/")
    assert not is_url("http-get")
    assert not is_url("./a://b.toml")
    assert not is_url("127.0.0.1:80")
    assert for_url("HTTPS://x/").protocol == "http"
    with pytest.raises(ValueError, match=r"mqtt://: a URL run speaks http://, https://"):
        for_url("mqtt://x/")


def test_the_urls_profile_is_what_the_flags_say() -> None:
    run = _run(
        data="{}", content_type="application/json", header=["X-A: 1", "Content-Type: text/x"]
    )
    group = run.loaded.profile.group[0]
    assert (group.name, group.op, group.count) == ("post", "request", 50)
    assert group.params["method"] == "POST"  # a body without -m: curl's POST
    assert group.params["body"] == "{}"
    assert group.params["headers"] == {"Content-Type": "text/x", "X-A": "1"}  # -H wins
    assert _params(method="head")["method"] == "HEAD"
    assert _params()["method"] == "GET"
    assert run.loaded.source == SOURCE
    assert run.loaded.profile.name == "127.0.0.1-9"


def test_auth_is_a_basic_authorization_header_and_never_in_the_profiles_hash() -> None:
    run = _run(auth="user:pa:ss")
    token = base64.b64encode(b"user:pa:ss").decode()
    assert run.data["group"][0]["headers"] == {"Authorization": f"Basic {token}"}
    assert token not in run.loaded.text
    assert '"<secret>"' in run.loaded.text


def test_options_from_flags() -> None:
    run = _run(insecure=True, disable_keepalive=True, secret_header=["X-Sig"], ca_file="ca.pem")
    assert run.data["options"] == {
        "insecure": True,
        "ca_file": "ca.pem",
        "keepalive": False,
        "secret_headers": ["X-Sig"],
    }


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"header": ["no colon"]}, "--header/-H: expected 'Name: value' or @FILE"),
        ({"header": ["Bad Name: 1"]}, "--header/-H: bad HTTP header name 'Bad Name'"),
        ({"header": ["Bad Name: 1"], "method": "PUT"}, "--header/-H: bad HTTP header name"),
        ({"content_type": "a\x01b", "method": "PUT"}, "--content-type/-T: bad value for"),
        ({"header": ["@a", "@b"]}, "--header/-H: one @FILE of headers at most"),
        ({"auth": "S3CRET"}, "--auth/-a: expected USER:PASSWORD"),
        ({"method": "G T"}, "--method/-m: bad HTTP method 'G T'"),
        ({"expect_status": ["200,x"]}, "--expect-status: expected statuses such as 200"),
        ({"expect_status": ["99"]}, "--expect-status: expected HTTP statuses between 100"),
        ({"body_file": "/no/such"}, "--body-file/-D: body_file '/no/such' is not a readable"),
        ({"data": "@/no/such"}, "--data: body_file '/no/such' is not a readable file"),
        ({"data": "x", "body_file": __file__}, "--data, --body-file/-D: give body or body_file"),
        ({"connect_to": "x"}, "--connect-to 'x': expected HOST:PORT or HOST1:PORT1:HOST2:PORT2"),
        ({"resolve": "a:b"}, "--resolve 'a:b': expected HOST:PORT:ADDRESS"),
        ({"resolve": "a:b:c"}, "--resolve 'a:b:c': expected a port 1-65535, got 'b'"),
        ({"connect_to": "a:1", "resolve": "h:80:b"}, "--connect-to, --resolve: give one of them"),
    ],
)
def test_a_bad_value_is_an_error_naming_its_flag(line: dict[str, Any], message: str) -> None:
    with pytest.raises(loader.ProfileError) as caught:
        _run(**line)
    assert str(caught.value).startswith(message)
    assert "S3CRET" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://x/", "URL: ftp://: a URL run speaks http://, https://"),
        ("http://u:S3CRET@x/", "URL: bad URL 'http://u:<secret>@x/': credentials"),
        ("http://x/?q=1", "URL: bad URL 'http://x/?q=1': put the query string"),
        ("http://x/\x1b[31m", "URL: bad URL 'http://x/\\x1b[31m': control characters"),
    ],
)
def test_a_bad_url_is_an_error_naming_it_without_its_secret(url: str, message: str) -> None:
    with pytest.raises(loader.ProfileError) as caught:
        url_profile(url, {})
    assert str(caught.value).startswith(message)


def test_a_body_file_that_is_a_directory_or_too_large_is_refused(tmp_path: Path) -> None:
    with pytest.raises(loader.ProfileError, match="is not a readable file"):
        _run(body_file=str(tmp_path))
    large = tmp_path / "large.bin"
    with large.open("wb") as file:
        file.truncate(64 * 2**20 + 1)  # sparse: no disk used
    with pytest.raises(loader.ProfileError, match=r"--data: body_file .* is larger than 64 MiB"):
        _run(data=f"@{large}")


def test_a_headers_file_never_shows_its_values_in_an_error(tmp_path: Path) -> None:
    file = tmp_path / "h.txt"
    file.write_text("# comment\n\nAuthorization: Bearer S3CRET\nX-A: 1\n")
    assert read_headers(str(file)) == [("Authorization", "Bearer S3CRET"), ("X-A", "1")]
    file.write_text("X-A: 1\nS3CRET without a colon\n")
    with pytest.raises(loader.ProfileError) as caught:
        _run(header=[f"@{file}"])
    assert str(caught.value) == f"--header/-H: headers_file '{file}' line 2: expected 'Name: value'"


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("127.0.0.1:8080", (None, None, "127.0.0.1", 8080)),
        ("[::1]:443", (None, None, "::1", 443)),
        ("example.org:443:127.0.0.1:8443", ("example.org", 443, "127.0.0.1", 8443)),
        ("::127.0.0.1:8443", (None, None, "127.0.0.1", 8443)),
        ("[::1]:80:[::1]:8080", ("::1", 80, "::1", 8080)),
    ],
)
def test_connect_to_forms(value: str, parsed: tuple[Any, ...]) -> None:
    assert connect_target(value) == parsed


def test_connect_to_applies_to_its_host_and_port_only() -> None:
    from protobench.protocols.http.client import parse_url  # noqa: PLC0415

    endpoint = parse_url("https://example.org/x")
    assert connect_via(endpoint, "127.0.0.1:8443").via == ("127.0.0.1", 8443)
    assert connect_via(endpoint, "example.org:443:127.0.0.1:1").via == ("127.0.0.1", 1)
    assert connect_via(endpoint, "other.org:443:127.0.0.1:1").via is None
    assert connect_via(endpoint, "example.org:80:127.0.0.1:1").via is None


def _plan_of(loaded: loader.LoadedProfile, overrides: Overrides) -> dict[str, Any]:
    """A plan's workload: what differs between a one-liner and its saved profile left out."""
    plan = resolve(loaded, overrides).to_dict()
    for name in ("source", "profile_sha256", "overrides"):
        plan.pop(name)
    for group in plan["groups"]:
        params = group["params"]
        file = params.pop("headers_file", None)
        if file is not None:
            params["headers"] = {**dict(read_headers(file)), **params.get("headers", {})}
    return plan


def test_a_saved_profile_loads_to_the_same_plan_without_its_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "theirs.headers").write_text("X-From-File: 1\n")
    flags = RunFlags(
        {
            "duration": "30s",
            "requests": 1000,
            "connections": 8,
            "rate": "2000/s",
            "thresholds": ["p99<5ms"],
            "options": ["insecure=true"],
        },
        {
            "method": "put",
            "header": ["X-Test: 1", "Cookie: S3CRETc", "@theirs.headers"],
            "auth": "u:S3CRETa",
            "data": "body",
            "connect_to": "127.0.0.1:9",
        },
    )
    run = url_profile(URL, flags.line, "api")
    text, headers = saved_profile(run, flags.profile_keys(), "api.headers", "X-From-File: 1\n")
    assert "S3CRET" not in text
    assert headers is not None
    assert headers.startswith("X-From-File: 1\n")
    assert "Cookie: S3CRETc" in headers
    (tmp_path / "api.toml").write_text(text)
    (tmp_path / "api.headers").write_text(headers)
    saved = tomllib.loads(text)
    assert saved["duration"] == "30s"  # as typed
    assert saved["rate"] == "2000/s"
    one_liner = _plan_of(run.loaded, flags.overrides())
    again = _plan_of(loader.load("api.toml"), Overrides())
    assert one_liner == again
    assert again["requests"] == 1000
    assert again["options"] == {"insecure": True, "connect_to": "127.0.0.1:9"}
    assert {f.name for f in fields(RunPlan)} >= set(again)


def test_bad_input_is_one_line_and_exit_2() -> None:
    for args in (
        ["run", "ftp://x/"],
        ["run", URL, "-H", "nocolon"],
        ["run", URL, "-D", "/no/such/file"],
        ["run", "http-get", "-H", "X: 1"],
        ["run", URL, "--target", "http://127.0.0.1:9/"],
        ["run", "http-get", "--save-profile", "x.toml"],
        ["sweep", URL, "--vary", "connections=1,2", "-m", "BAD METHOD"],
    ):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (args, lines)
        assert lines[0].startswith("protobench: error: ")


def test_the_duration_flags_error_says_where_a_body_goes() -> None:
    result = CliRunner().invoke(app, ["run", URL, "-d", '{"a": 1}'])
    assert result.exit_code == 2
    assert "a request body is --data BODY" in result.stderr


def test_a_host_and_port_without_a_scheme_is_told_to_add_one() -> None:
    result = CliRunner().invoke(app, ["run", "127.0.0.1:8080/api"])
    assert result.exit_code == 2
    assert "(a URL needs its scheme: http://...)" in result.stderr


def test_protobench_target_from_the_environment_does_not_apply_to_a_url_run() -> None:
    from protobench.cli.profile_arg import load_profile  # noqa: PLC0415

    flags = RunFlags({"target": "http://127.0.0.1:1/"}, {}, frozenset({"target"}))
    first = load_profile(URL, flags)
    assert resolve(first.loaded, first.flags.overrides()).target == URL
    result = CliRunner().invoke(app, ["run", URL, "-t", "http://127.0.0.1:1/"])
    assert result.exit_code == 2
    assert "a URL run's target is its URL" in result.stderr

"""The Haystack discovery summary and fitted profile, from a hand-made server description."""

from __future__ import annotations

import tomllib

from protobench.profiles import loader
from protobench.protocols.haystack.discover import Entity, ServerInfo
from protobench.protocols.haystack.fit import fitted_profile, summary
from protobench.protocols.haystack.options import HaystackOptions

URL = "https://haystack.example.test/api"


def info(ops: list[str], user: str | None = None, **entities: list[Entity]) -> ServerInfo:
    return ServerInfo(
        url=URL,
        user=user,
        about={"productName": "SkySpark", "productVersion": "3.1", "tz": "Denver"},
        ops=ops,
        formats=[("text/zinc", True, True), ("text/csv", False, True)],
        entities=dict(entities),
    )


def test_only_the_ops_the_server_lists_are_in_the_profile() -> None:
    server = info(["about", "read"], sites=[Entity("s1", "HQ")], points=[], his_points=[])
    text = fitted_profile(server, "mine", HaystackOptions(), set())
    profile = tomllib.loads(text)
    assert profile["options"] == {"auth": False}  # the server answered without a login
    assert [g["name"] for g in profile["group"]] == ["about", "read-site", "read-by-id"]
    assert profile["group"][2]["filters"] == ["id==@s1"]
    loader.parse(text, "mine.toml")


def test_options_are_carried_as_given_and_secrets_are_placeholders() -> None:
    opts = HaystackOptions.model_validate(
        {
            "user": "ops",
            "password": "hunter2-secret",
            "auth": False,
            "content_type": "application/json",
            "headers": {"Authorization": "Bearer abc.def", "X-Site": "north"},
        }
    )
    text = fitted_profile(info(["about"], "ops"), "mine", opts, set(opts.model_fields_set))
    assert "hunter2-secret" not in text
    assert "abc.def" not in text
    assert '# password = "<secret>"' in text
    options = tomllib.loads(text)["options"]
    assert options == {
        "user": "ops",
        "auth": False,
        "content_type": "application/json",
        "headers": {"Authorization": "<secret>", "X-Site": "north"},
    }
    loader.parse(text, "mine.toml")


def test_point_write_is_offered_commented_out() -> None:
    server = info(
        ["read", "pointWrite", "hisRead"],
        writable_points=[Entity("p1", "")],
        his_points=[Entity("p2", "")],
    )
    text = fitted_profile(server, "mine", HaystackOptions(), set())
    assert '# op = "point-write"' in text
    assert "auth = false" in text
    groups = tomllib.loads(text)["group"]
    assert [g["op"] for g in groups] == ["his-read"]
    assert groups[0]["points"] == ["p2"]


def test_summary_says_what_the_server_has() -> None:
    server = info(["about", "ops", "watchSub", "watchPoll"], sites=[Entity("s1", "HQ")] * 5)
    text = summary(server)
    assert text.splitlines()[:2] == [
        f"haystack server at {URL}: SkySpark 3.1 (tz Denver)",
        "login: none",
    ]
    assert "formats: text/zinc (receive/send), text/csv (send)" in text
    assert 'sites: 5+: @s1 "HQ"' in text
    assert text.endswith("hisRead: no, pointWrite: no, watch: watchSub, watchPoll")

"""``protobench beckn keys``: the registry record of a key, never the private key."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from protobench.cli import app
from protobench.protocols.beckn.keys import DEV_KEY_ID, DEV_PUBLIC_KEY, DEV_SUBSCRIBER_ID
from protobench.protocols.beckn.options import BecknOptions
from tests.protocols.beckn.test_signing import SPEC_PRIVATE, SPEC_PUBLIC

RUNNER = CliRunner()


def test_the_development_key_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BECKN_PRIVATE_KEY", raising=False)
    result = RUNNER.invoke(app, ["beckn", "keys", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "subscriber_id": DEV_SUBSCRIBER_ID,
        "key_id": DEV_KEY_ID,
        "signing_public_key": DEV_PUBLIC_KEY,
    }


def test_a_key_from_the_environment_needs_its_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BECKN_PRIVATE_KEY", SPEC_PRIVATE)
    refused = RUNNER.invoke(app, ["beckn", "keys"])
    assert refused.exit_code == 2
    assert "--subscriber-id and --key-id" in refused.output
    result = RUNNER.invoke(app, ["beckn", "keys", "--subscriber-id", "bap.x", "--key-id", "k1"])
    assert result.exit_code == 0, result.output
    assert f"signing_public_key   {SPEC_PUBLIC}" in result.stdout
    assert SPEC_PRIVATE not in result.output


def test_generate_writes_a_private_file_and_prints_only_the_public_key(tmp_path: Path) -> None:
    secret = tmp_path / "bap.key"
    args = ["beckn", "keys", "--generate", str(secret), "--subscriber-id", "bap.x", "--key-id", "k"]
    result = RUNNER.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    encoded = secret.read_text().strip()
    assert encoded not in result.output
    options = BecknOptions.model_validate(
        {"private_key": encoded, "subscriber_id": "bap.x", "key_id": "k"}
        | {"public_key": record["signing_public_key"]}
    )
    assert options.public_key == record["signing_public_key"]
    again = RUNNER.invoke(app, args)
    assert again.exit_code == 2
    assert "never overwritten" in again.output
    assert secret.read_text().strip() == encoded


def test_the_cli_default_variable_is_the_plugins() -> None:
    from protobench.cli import beckn_cmd  # noqa: PLC0415
    from protobench.protocols.beckn import keys  # noqa: PLC0415

    assert beckn_cmd.PRIVATE_KEY_ENV == keys.PRIVATE_KEY_ENV

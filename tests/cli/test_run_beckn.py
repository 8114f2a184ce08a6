"""The beckn-bap profile run through the CLI against the mock BPP, counted on both sides."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from protobench.targets.http import STATS_PATH
from tests.support.beckn import SPEC_PRIVATE_KEY, SPEC_PUBLIC_KEY
from tests.support.haystack import SHORT, assert_all_groups_clean, run, stored_text

pytestmark = pytest.mark.integration

GROUPS = ["discover", "select", "init", "confirm"]


@contextmanager
def served_bpp(*args: str) -> Iterator[str]:
    """``protobench serve beckn-bpp`` in a subprocess; yields its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "protobench", "serve", "beckn-bpp", "--port", "0", "--announce",
         *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert process.stdout is not None
        yield str(json.loads(process.stdout.readline())["url"])
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_beckn_bap_profile_counts_match_the_bpp_acks(tmp_path: Path) -> None:
    with served_bpp() as url:
        result = run(tmp_path, "beckn-bap", *SHORT, "--target", url)
        stats = httpx.get(url + STATS_PATH).json()
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert_all_groups_clean(report, GROUPS)
    ok = sum(phase["total"]["ok"] for phase in report["phases"].values())
    assert ok == stats["ack"]
    assert all(report["phases"]["sustain"]["ops"][group]["bytes_out"] > 0 for group in GROUPS)
    assert stats.get("unauthorized", 0) == 0


def test_private_key_option_is_used_and_never_stored(tmp_path: Path) -> None:
    with served_bpp(
        "--subscriber-id", "bap.example.com", "--key-id", "k1", "--public-key", SPEC_PUBLIC_KEY
    ) as url:
        result = run(
            tmp_path, "beckn-bap", *SHORT, "--target", url, "-c", "4",
            "--opt", f"private_key={SPEC_PRIVATE_KEY}", "--opt", "subscriber_id=bap.example.com",
            "--opt", "key_id=k1",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert_all_groups_clean(result.json(), GROUPS)
    secret = SPEC_PRIVATE_KEY[:40]
    assert secret not in result.stdout
    assert secret not in stored_text(tmp_path)


def test_embedded_bpp_rejects_another_key_as_auth(tmp_path: Path) -> None:
    ids = ("subscriber_id=bap.example.com", "key_id=k1")
    result = run(
        tmp_path, "beckn-bap", "--warmup", "0s", "--duration", "2s", "--json", "--quiet",
        "-c", "4", "-p", "1", "--opt", f"private_key={SPEC_PRIVATE_KEY}",
        *(arg for pair in ids for arg in ("--opt", pair, "--serve-opt", pair)),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    total = result.json()["phases"]["sustain"]["total"]
    assert total["ok"] == 0
    assert total["errors"] > 0
    assert set(total["errors_by_class"]) == {"auth"}
    assert "signature does not verify" in total["last_errors"]["auth"]


def test_a_key_that_cannot_be_the_registered_one_stops_the_run_before_it_starts(
    tmp_path: Path,
) -> None:
    """Another private key under the development key's ids would get 401 on everything."""
    result = run(
        tmp_path, "beckn-bap", "--warmup", "0s", "--duration", "1s", "--quiet", "-p", "1",
        "--opt", f"private_key={SPEC_PRIVATE_KEY}",
    )  # fmt: skip
    assert result.returncode == 2
    assert "development key's" in result.stderr
    assert "awGPjRK6i/Vg/lWr+0xObclVxlwZXvTjWYtlu6NeOHk=" in result.stderr  # its public key
    assert SPEC_PRIVATE_KEY not in result.stderr + result.stdout


def test_the_documented_beckn_onix_command_runs_with_the_key_in_the_environment(
    tmp_path: Path,
) -> None:
    """``BECKN_PRIVATE_KEY=... run beckn-onix --opt subscriber_id=... --opt key_id=...``: the
    built-in's own ids are the development key's, the --opt ids complete them before the
    key is checked."""
    ids = ("--subscriber-id", "bap-network", "--key-id", "bap-network-key")
    with served_bpp(*ids, "--public-key", SPEC_PUBLIC_KEY) as url:
        result = run(
            tmp_path, "beckn-onix", *SHORT, "-c", "4", "--target", url,
            "--opt", "subscriber_id=bap-network", "--opt", "key_id=bap-network-key",
            env={"BECKN_PRIVATE_KEY": SPEC_PRIVATE_KEY},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert_all_groups_clean(result.json(), GROUPS)
    assert SPEC_PRIVATE_KEY[:40] not in result.stdout + stored_text(tmp_path)


def test_sign_false_is_applied_before_the_key_is_checked(tmp_path: Path) -> None:
    """Unsigned requests need no key: another key in the environment is not checked, the
    run goes to the BPP (which wants signatures: 401 on everything, exit 1, not 2)."""
    with served_bpp() as url:
        result = run(
            tmp_path, "beckn-onix", "--warmup", "0s", "--duration", "1s", "--json", "--quiet",
            "-p", "1", "-c", "2", "--target", url, "--opt", "sign=false",
            env={"BECKN_PRIVATE_KEY": SPEC_PRIVATE_KEY},
        )  # fmt: skip
    assert result.returncode == 1, result.stderr
    total = result.json()["phases"]["sustain"]["total"]
    assert total["ok"] == 0
    assert set(total["errors_by_class"]) == {"auth"}


def test_the_key_check_still_runs_on_the_final_options(tmp_path: Path) -> None:
    """The built-in's development ids kept (no --opt ids): the mismatch stops the run (2)."""
    result = run(
        tmp_path, "beckn-onix", "--warmup", "0s", "--duration", "1s", "--quiet", "-p", "1",
        "--opt", "bpp_id=other", env={"BECKN_PRIVATE_KEY": SPEC_PRIVATE_KEY},
    )  # fmt: skip
    assert result.returncode == 2
    assert "--opt" in result.stderr
    assert "development key's" in result.stderr

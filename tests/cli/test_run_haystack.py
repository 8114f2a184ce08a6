"""Built-in Haystack profiles run through the CLI for a few seconds against the embedded server."""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.haystack import SHORT, assert_all_groups_clean, run, stored_text

pytestmark = pytest.mark.integration


def test_haystack_http_profile_runs_clean_and_keeps_the_password_secret(tmp_path: Path) -> None:
    password = "pw-" + secrets.token_hex(12)
    result = run(
        tmp_path, "haystack-http", *SHORT, "--opt", f"password={password}",
        env={"HAYSTACK_PASSWORD": password},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = result.json()
    groups = ["about", "ops", "read-site", "read-point", "nav"]
    assert_all_groups_clean(report, groups)
    assert all(report["phases"]["sustain"]["ops"][group]["bytes_out"] > 0 for group in groups)
    assert password not in result.stdout
    assert password not in result.stderr
    stored = stored_text(tmp_path)
    assert report["snapshot"]
    assert "haystack-http" in stored
    assert password not in stored


def test_haystack_ws_profile_runs_clean(tmp_path: Path) -> None:
    result = run(tmp_path, "haystack-ws", *SHORT)
    assert result.returncode == 0, result.stderr
    groups = ["ws-about", "ws-ops", "ws-read-site", "ws-read-point", "ws-nav"]
    report = result.json()
    assert_all_groups_clean(report, groups)
    assert all(report["phases"]["sustain"]["ops"][group]["bytes_out"] > 0 for group in groups)


def test_wrong_password_is_counted_as_auth_with_the_server_message(tmp_path: Path) -> None:
    wrong = "wrong-" + secrets.token_hex(8)
    result = run(
        tmp_path, "haystack-http", "--warmup", "0s", "--duration", "2s", "--json", "--quiet",
        "-c", "5", "-p", "1", "--opt", f"password={wrong}", "--opt", "auth_per=worker",
    )  # fmt: skip
    assert result.returncode == 3, result.stderr  # no session could open
    reason = result.json()["verdicts"]["incomplete_reason"]
    assert reason.startswith("no session could open (5 failed); last error: auth:")
    total = result.json()["phases"]["sustain"]["total"]
    assert total["ok"] == 0
    assert set(total["errors_by_class"]) == {"auth"}
    assert "Authentication failed" in total["last_errors"]["auth"]
    assert wrong not in result.stdout
    assert wrong not in stored_text(tmp_path)


def test_a_wrong_password_stops_the_run_early_with_one_line(tmp_path: Path) -> None:
    """Every session fails to open: the run stops after a few seconds, not after its minute,
    and says why in one line instead of a table of auth errors."""
    wrong = "wrong-" + secrets.token_hex(8)
    done = subprocess.run(
        [sys.executable, "-m", "protobench", "run", "haystack-http", "--no-tui",
         "--duration", "60s", "-c", "5", "-p", "1", "--opt", f"password={wrong}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=50, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    lines = done.stdout.splitlines()
    (why,) = [line for line in lines if line.startswith("NOTHING MEASURED: ")]
    assert why.startswith("NOTHING MEASURED: no session could open in ")
    assert "(5 sessions, " in why
    assert "; first error: auth: " in why
    assert "Authentication failed" in why
    assert why.endswith(" times); stopped early")
    assert "PARTIAL RUN (no-session)" in lines
    assert not [line for line in lines if line.startswith(("TOTAL", "op ", "threshold"))]
    assert len(lines) <= 8
    assert wrong not in done.stdout

"""Haystack credentials: the embedded server's dev account and password lookup.

A password is a secret: it comes from the ``password`` option (redacted in
plans, reports and snapshots), else from the environment variable named by
``password_env`` (``HAYSTACK_PASSWORD`` by default), else it is the embedded
server's documented development password. Nothing here logs or stores it.
"""

from __future__ import annotations

import os

from pydantic import SecretStr

DEV_USER = "admin"
DEV_PASSWORD = "hs-dev-4096"
"""The embedded server's default account (a development credential, never a real one)."""

PASSWORD_ENV = "HAYSTACK_PASSWORD"


def resolve_password(option: SecretStr | None, env_name: str = PASSWORD_ENV) -> str:
    """The password to use: the option, else ``$env_name``, else :data:`DEV_PASSWORD`."""
    if option is not None:
        return option.get_secret_value()
    return os.environ.get(env_name) or DEV_PASSWORD

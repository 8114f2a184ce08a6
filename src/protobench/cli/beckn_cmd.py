"""``protobench beckn keys``: a BAP's public key and its registry record.

The private key is read from ``--private-key-file``, else from ``$BECKN_PRIVATE_KEY``
(``--private-key-env``), else it is beckn-onix's development key; ``--generate
FILE`` makes a new one and writes it to FILE (mode 0600, never printed). Printed:
the subscriber id, key id and signing public key to register (with ``--json``, as
one JSON record), never the private key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from protobench.cli.common import fail, print_json
from protobench.termtext import echo

PRIVATE_KEY_ENV = "BECKN_PRIVATE_KEY"
"""The default variable holding the private key (the same name as the beckn plugin's)."""

app = typer.Typer(help="Beckn helpers: keys for a registry.", no_args_is_help=True)


def _write_secret(path: Path, encoded: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        fail(f"--generate {path}: the file exists (it is never overwritten)")
    except OSError as exc:
        fail(f"--generate {path}: {exc.strerror or exc}")
    with os.fdopen(fd, "w") as handle:
        handle.write(encoded + "\n")


def _read_key(path: Path | None, env_name: str) -> tuple[str, str]:
    """The base64 private key and where it came from."""
    from protobench.protocols.beckn.keys import DEV_PRIVATE_KEY  # noqa: PLC0415 - cryptography

    if path is not None:
        try:
            return path.read_text().strip(), str(path)
        except OSError as exc:
            fail(f"--private-key-file {path}: {exc.strerror or exc}")
    if os.environ.get(env_name):
        return os.environ[env_name].strip(), f"${env_name}"
    return DEV_PRIVATE_KEY, "beckn-onix's development key"


@app.command("keys")
def keys(
    subscriber_id: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Subscriber id (default: the development key's)."),
    ] = None,
    key_id: Annotated[
        str | None, typer.Option(metavar="ID", help="Key id (default: the development key's).")
    ] = None,
    private_key_file: Annotated[
        Path | None, typer.Option(metavar="FILE", help="File holding the base64 private key.")
    ] = None,
    private_key_env: Annotated[
        str, typer.Option(metavar="VAR", help="Environment variable holding the private key.")
    ] = PRIVATE_KEY_ENV,
    generate: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="Make a new key pair; write the private key to this file."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the record as JSON.")] = False,
) -> None:
    """Print the public key and registry record of a BAP's signing key.

    \b
    Examples:
      protobench beckn keys
      protobench beckn keys --generate bap.key --subscriber-id bap.example --key-id k1

    \b
    Exit codes: 0 ok, 2 bad input (a key that does not parse, a file that exists).
    """
    from protobench.protocols.beckn.keys import (  # noqa: PLC0415 - cryptography, not for --help
        DEV_KEY_ID,
        DEV_PRIVATE_KEY,
        DEV_SUBSCRIBER_ID,
        KeyFormatError,
        new_private_key,
        private_key,
        registry_record,
    )

    if generate is not None:
        encoded, source = new_private_key(), str(generate)
    else:
        encoded, source = _read_key(private_key_file, private_key_env)
    try:
        private_key(encoded)
    except KeyFormatError as exc:
        fail(f"{source}: {exc}")
    is_dev = encoded == DEV_PRIVATE_KEY
    if (subscriber_id is None or key_id is None) and not is_dev:
        fail("--subscriber-id and --key-id: the ids this key is (to be) registered under")
    if generate is not None:
        _write_secret(generate, encoded)
    record = registry_record(subscriber_id or DEV_SUBSCRIBER_ID, key_id or DEV_KEY_ID, encoded)
    if as_json:
        print_json(record)
        return
    for name, value in record.items():
        echo(f"{name:20} {value}")
    echo(f"# private key: {source} (never printed)", err=True)

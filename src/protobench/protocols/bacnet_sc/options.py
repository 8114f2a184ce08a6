"""Options of the ``bacnet-sc`` protocol and parameters of its operations."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from protobench.protocols.base import StrictModel
from protobench.protocols.payloads import PayloadSize, check_mix, parse_mix

MAX_NPDU = 1497
"""bac-py's default maximum NPDU length on SC."""
DEFAULT_MIX = "25:30%, 200:30%, 800:25%, 1400:15%"
DEFAULT_NODES = ("02:bb:00:00:00:01", "02:bb:00:00:00:02")


def _vmac(text: str) -> str:
    raw = text.replace(":", "").replace("-", "")
    try:
        value = bytes.fromhex(raw)
    except ValueError:
        raise ValueError(f"expected a VMAC such as '02:bb:00:00:00:01', got {text!r}") from None
    if len(value) != 6:
        raise ValueError(f"a VMAC has 6 bytes, got {text!r}")
    return value.hex(":")


class BacnetScOptions(StrictModel):
    """TLS material of the stress nodes (files named in the target URL fill unset ones)."""

    cert_file: str | None = None
    key_file: str | None = None
    ca_file: str | None = None
    key_password: str | None = None


class _EchoParams(StrictModel):
    payload: PayloadSize = Field(default_factory=lambda: parse_mix(DEFAULT_MIX))
    prefix: str = "ECHO:"
    """What the echo nodes put before the NPDU they send back."""
    inflight: int = Field(default=1, ge=1, le=1024)
    """Sessions of the group sharing one SC connection, each with one exchange in flight
    (bac-py's SC benchmark keeps 8 unicast echoes in flight on its one stress node)."""

    @model_validator(mode="after")
    def _fits(self) -> _EchoParams:
        check_mix(self.payload, "binary", MAX_NPDU - len(self.prefix.encode()))
        return self


class UnicastParams(_EchoParams):
    """``unicast``: an NPDU to one of ``nodes`` (chosen at random), await its echo."""

    nodes: list[str] = Field(default_factory=lambda: list(DEFAULT_NODES), min_length=1)

    @field_validator("nodes")
    @classmethod
    def _vmacs(cls, value: list[str]) -> list[str]:
        return [_vmac(item) for item in value]


class BroadcastParams(_EchoParams):
    """``broadcast``: an NPDU to every node; done when ``echoes`` nodes have echoed it."""

    echoes: int = Field(default=2, ge=1, le=65_535)

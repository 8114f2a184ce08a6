"""Options of the ``beckn`` protocol and the parameters of its operations."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator

from protobench.protocols.base import StrictModel, overrides_applied
from protobench.protocols.beckn.keys import (
    DEV_KEY_ID,
    DEV_SUBSCRIBER_ID,
    PRIVATE_KEY_ENV,
    KeyFormatError,
    key_mismatch,
    private_key,
    public_key,
    resolve_private_key,
)


class BecknOptions(StrictModel):
    """Protocol-wide options (the profile's ``[options]``)."""

    subscriber_id: str = Field(default=DEV_SUBSCRIBER_ID, description="BAP subscriber id (keyId)")
    key_id: str = Field(default=DEV_KEY_ID, description="unique key id (keyId)")
    private_key: SecretStr | None = Field(
        default=None,
        description="secret: base64 Ed25519 key; unset: $private_key_env, else the onix dev key",
    )
    private_key_env: str = Field(default=PRIVATE_KEY_ENV, description="env variable of the key")
    sign: bool = Field(default=True, description="sign requests (false: no Authorization)")
    signature_ttl: int = Field(default=300, ge=1, le=86_400, description="expires - created, s")
    bap_id: str | None = Field(default=None, description="context.bapId (default: subscriber_id)")
    bap_uri: str = Field(
        default="http://127.0.0.1/bap",
        description="context.bapUri when callbacks are not awaited",
    )
    bpp_id: str = Field(default="bpp.protobench.local", description="context.bppId")
    bpp_uri: str | None = Field(default=None, description="context.bppUri (default: the target)")
    insecure: bool = Field(default=False, description="skip TLS certificate verification")
    ca_file: str | None = Field(default=None, description="PEM file of CAs to trust")
    public_key: str | None = Field(
        default=None,
        description="your registered signing public key (base64): the private key must match",
    )
    bpp_public_key: str | None = Field(
        default=None,
        description="the BPP's public key (base64): every ACK's Signature header must verify",
    )

    @field_validator("private_key")
    @classmethod
    def _key_decodes(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            try:
                private_key(value.get_secret_value())
            except KeyFormatError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("public_key", "bpp_public_key")
    @classmethod
    def _public_key_decodes(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                public_key(value)
            except KeyFormatError as exc:
                raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _key_pair_matches(self, info: ValidationInfo) -> BecknOptions:
        """A private key that is not the registered one gives 401 on everything: say so now
        (on the run's final options: ``--opt subscriber_id=...`` completes a built-in's)."""
        if self.sign and overrides_applied(info):
            try:
                mismatch = key_mismatch(
                    resolve_private_key(self.private_key, self.private_key_env),
                    self.subscriber_id,
                    self.key_id,
                    self.public_key,
                )
            except KeyFormatError as exc:
                raise ValueError(f"${self.private_key_env}: {exc}") from None
            if mismatch:
                raise ValueError(mismatch)
        return self


class ActionParams(StrictModel):
    """Parameters of ``select``, ``init`` and ``confirm``."""

    reuse_ids: bool = Field(
        default=False,
        description="send one fixed body (same ids) instead of fresh messageId/transactionId",
    )
    await_callback: bool = Field(
        default=False,
        description="complete on the on_{action} callback (request -> callback latency)",
    )


class DiscoverParams(ActionParams):
    """Parameters of ``discover``: the text searches, cycled."""

    queries: list[str] = Field(
        default_factory=lambda: ["pizza", "coffee", "masala dosa", "biryani", "green salad"],
        min_length=1,
        description="intent.textSearch values, cycled",
    )


OPERATIONS: Mapping[str, type[StrictModel]] = {
    "discover": DiscoverParams,
    "select": ActionParams,
    "init": ActionParams,
    "confirm": ActionParams,
}

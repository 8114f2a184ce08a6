"""Embedded servers: the targets for `protobench serve` and runs without --target."""

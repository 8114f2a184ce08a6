"""protobench: a terminal benchmark runner and live monitor for network protocols."""

__version__ = "0.1.0"
